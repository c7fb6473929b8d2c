#pragma once
// A stream's settings as jetfan needs them: $JS.API.STREAM.INFO.<stream> and its answer. jetfan
// reads the duplicate window of the streams its handlers publish to (a tied publish's copy made
// again by a redelivery is dropped only within it). Pure.

#include <chrono>
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
};

// The stream's settings, or the server's error, or why the answer cannot be read.
std::variant<StreamInfo, ApiError> parse_stream_info(std::string_view json_text);

}  // namespace jetfan::jetstream
