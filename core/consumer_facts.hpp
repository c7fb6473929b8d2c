#pragma once
// What the NATS server says about the bound consumer. Plain values, read once at startup by the
// daemon's JetStream reader; the settings jetfan serves with are derived from them and the config.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ack_policy.hpp"
#include "time.hpp"

namespace jetfan {

struct ConsumerFacts {
  // All nullopt/-1 when consumer info could not be read (an account without that permission).
  std::optional<AckPolicy> ack_policy;
  std::optional<Duration> ack_wait;
  std::int64_t max_deliver = -1;      // -1: unlimited
  std::int64_t max_ack_pending = -1;  // -1: unlimited
  std::string filter;                 // the consumer's filter subject, empty for the whole stream
  std::uint64_t num_pending = 0;
  std::uint64_t num_waiting = 0;  // pull requests waiting at the consumer (a reader is there)
  // What an earlier reader may have left unacked: stream sequences in (ack_floor, delivered], of
  // which ack_pending are unacked (NumAckPending). Ordered handlers wait for those (docs/dispatch-rules.md R26).
  std::uint64_t ack_floor = 0;
  std::uint64_t delivered = 0;
  std::uint64_t ack_pending = 0;
  std::uint64_t delivered_consumer_seq = 0;  // the consumer's number of its last delivery
  // Features of nats-server 2.11 and later; older servers say nothing of them (empty, false).
  std::string priority_policy;               // "pinned_client", "overflow", ...; empty or "none": none
  std::vector<std::string> priority_groups;  // a pull must name one of these when there are any
  Duration priority_timeout{0};              // how long a pin outlives its client's last pull
  bool paused = false;                       // the server delivers nothing until pause_until
  std::string pause_until;                   // RFC 3339, as the server said it
  bool from_server = false;
  std::string server_version;  // as the server's INFO says it ("2.15.1"); empty: not known
};

}  // namespace jetfan
