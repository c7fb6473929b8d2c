#pragma once
// DeadLetters: what the dispatcher publishes when a handler gives a message up (the core's
// Effect::Kind::kDeadLetter), and the publishes still waiting for JetStream's acknowledgement.
//
// A dead letter is the message as it came (its payload byte for byte, its headers name for name,
// value for value, in their order; a Jetfan-* header it already had is replaced) plus:
//   Jetfan-Handler     the handler that gave it up
//   Jetfan-Reason      "TERM", or "max_attempts 5 used up; last: ack_timeout"
//   Jetfan-Attempts    the deliveries to that handler that failed
//   Jetfan-Subject     the subject it was published on
//   Jetfan-Stream      the stream, Jetfan-Sequence its sequence there, Jetfan-Consumer the durable
//   Jetfan-Deliveries  how often the server had delivered it
//   Jetfan-Time        when the stream stored it (RFC 3339, UTC), if the server said
// The names are in docs/OPERATING.md ("Dead letters").
//
// A publish with no answer within `timeout` (the connection went, the server never answered)
// counts as failed: the core tries it again, so nothing waits for ever.
//
// Thread: the io_context thread.

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "time.hpp"

namespace jetfan {

struct DeadLetterFacts {
  std::string_view handler;
  std::string reason;
  std::uint32_t attempts = 0;
  std::string_view subject;
  std::string_view stream;
  std::uint64_t stream_seq = 0;
  std::string_view consumer;
  std::uint64_t deliveries = 0;
  std::uint64_t published_ns = 0;  // 0: not known
};

// The header block of a dead letter: `original` (a NATS/1.0 block, or empty) with the Jetfan-*
// headers of `facts` added. Pure.
std::string dead_letter_headers(std::string_view original, const DeadLetterFacts& facts);

class PendingPublishes {
 public:
  void sent(std::uint64_t id, TimePoint now) { sent_[id] = now; }
  // False: not pending (answered, or given up on already).
  bool answered(std::uint64_t id) { return sent_.erase(id) != 0; }
  // Those sent before now - timeout, no longer pending.
  std::vector<std::uint64_t> overdue(TimePoint now, Duration timeout);
  // Every one, no longer pending (the connection went: no answer will come).
  std::vector<std::uint64_t> take_all();
  std::size_t size() const { return sent_.size(); }

 private:
  std::unordered_map<std::uint64_t, TimePoint> sent_;
};

}  // namespace jetfan
