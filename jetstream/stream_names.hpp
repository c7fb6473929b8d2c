#pragma once
// Which streams capture a subject: $JS.API.STREAM.NAMES with {"subject": S}, and its answer (one
// page of up to 1024 names; jetfan asks about one subject, which few streams capture). Pure.

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "api_error.hpp"

namespace jetfan::jetstream {

inline constexpr std::string_view kStreamNamesSubject = "$JS.API.STREAM.NAMES";

std::string stream_names_request(std::string_view subject);

struct StreamNames {
  std::vector<std::string> streams;  // in the server's order; empty: none captures the subject
  std::uint64_t total = 0;           // how many there are in all pages
};

// The names (the server writes none as "streams": null), or the server's error, or why the answer
// cannot be read.
std::variant<StreamNames, ApiError> parse_stream_names(std::string_view json_text);

}  // namespace jetfan::jetstream
