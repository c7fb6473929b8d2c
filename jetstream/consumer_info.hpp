#pragma once
// The consumer's info: the request $JS.API.CONSUMER.INFO.<stream>.<consumer> (an empty body) and
// what the server answers, the consumer's config and state. Pure.
//
// Priority groups (priority_groups, priority_policy, priority_timeout) and pausing (pause_until,
// paused, pause_remaining) came with nats-server 2.11; older servers say nothing of them, and the
// defaults below (none, not paused) are what that means.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "api_error.hpp"

namespace jetfan::jetstream {

// The subject of the request; its body is empty.
std::string consumer_info_subject(std::string_view stream, std::string_view consumer);

struct SequencePair {
  std::uint64_t consumer_seq = 0;
  std::uint64_t stream_seq = 0;
};

// A priority group's state (the info's top-level priority_groups): whom it is pinned to, if anyone.
struct PriorityGroupState {
  std::string group;
  std::string pinned_client_id;  // empty: pinned to none
};

struct ConsumerInfo {
  std::string stream_name;
  std::string name;
  // Of its config.
  std::string durable_name;
  std::string ack_policy = "explicit";  // "explicit", "all", "none"
  std::chrono::nanoseconds ack_wait{0};
  std::int64_t max_deliver = -1;             // -1: unlimited
  std::int64_t max_ack_pending = -1;         // -1: unlimited
  std::string filter_subject;                // empty: the whole stream
  std::string deliver_subject;               // set: a push consumer
  std::vector<std::string> priority_groups;  // a pull must name one of these when there are any
  std::string priority_policy;               // "pinned_client", "overflow", ...; empty or "none": none
  std::chrono::nanoseconds pinned_ttl{0};    // priority_timeout: how long a pin outlives its client
  std::string pause_until;                   // RFC 3339, as the server wrote it; empty: not set
  // Its state.
  SequencePair delivered;
  SequencePair ack_floor;
  std::uint64_t num_ack_pending = 0;
  std::uint64_t num_redelivered = 0;
  std::uint64_t num_waiting = 0;
  std::uint64_t num_pending = 0;
  bool paused = false;                          // delivers nothing until pause_until
  std::chrono::nanoseconds pause_remaining{0};  // until then
  std::vector<PriorityGroupState> group_states;
};

// The info, or the server's error ("consumer not found", 404, err_code 10014), or why the answer
// cannot be read: not a JSON object, no config, or a member of the counts, sequences or settings of
// another type. Members of priority groups and pausing of an unexpected type are ignored (read as
// what an older server means by saying nothing), as are members this does not know.
std::variant<ConsumerInfo, ApiError> parse_consumer_info(std::string_view json_text);

}  // namespace jetfan::jetstream
