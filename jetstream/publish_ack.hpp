#pragma once
// What JetStream answers a publish to a subject one of its streams captures:
//   {"stream": "EVENTS", "seq": 7}                  stored
//   {"stream": "EVENTS", "seq": 5, "duplicate": true} already stored under its Nats-Msg-Id
//   {"error": {...}, "stream": "EVENTS", "seq": 0}  refused (a header's expectation not met, ...)
// (No stream at all is a 503 status without a body, which is the client's to see.) Pure.

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "api_error.hpp"

namespace jetfan::jetstream {

struct PublishAck {
  std::string stream;  // which stream took it
  std::uint64_t seq = 0;
  bool duplicate = false;
  std::string domain;  // the JetStream domain, when the server has one
};

// The acknowledgement, or the server's error, or why the answer is none (not JSON, no seq).
std::variant<PublishAck, ApiError> parse_publish_ack(std::string_view json_text);

}  // namespace jetfan::jetstream
