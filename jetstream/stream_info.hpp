#pragma once
// A stream's settings as jetfan needs them: $JS.API.STREAM.INFO.<stream> and its answer. jetfan
// reads the duplicate window of the streams its handlers publish to (a tied publish's copy made
// again by a redelivery is dropped only within it), and the settings of the confirmation ledger's
// key-value bucket (its history, its TTL). Pure.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "api_error.hpp"

namespace jetfan::jetstream {

std::string stream_info_subject(std::string_view stream);

struct StreamInfo {
  std::string name;
  std::vector<std::string> subjects;
  std::chrono::nanoseconds duplicate_window{0};  // config.duplicate_window; 0: the server gave none
  std::int64_t max_msgs_per_subject = -1;        // a key-value bucket's history; -1: no limit
  std::chrono::nanoseconds max_age{0};           // a key-value bucket's TTL; 0: none
  std::int64_t num_replicas = 1;
};

// The stream's settings, or the server's error, or why the answer cannot be read.
std::variant<StreamInfo, ApiError> parse_stream_info(std::string_view json_text);

}  // namespace jetfan::jetstream
