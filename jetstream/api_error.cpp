#include "api_error.hpp"

#include "json_read.hpp"

namespace jetfan::jetstream {

std::string ApiError::describe() const {
  if (code > 0) return description + " (" + std::to_string(code) + ")";
  return description;
}

std::optional<ApiError> parse_api_error(std::string_view json_text) {
  const auto answer = detail::parse(json_text);
  if (!answer.is_object()) return std::nullopt;
  return detail::error_in(answer);
}

ApiError unreadable(std::string_view what, std::string_view json_text) {
  ApiError error;
  error.description = std::string(what) + ": " + std::string(json_text.substr(0, 200));
  return error;
}

}  // namespace jetfan::jetstream
