#include "json_read.hpp"

namespace jetfan::jetstream::detail {

Json parse(std::string_view json_text) { return Json::parse(json_text.begin(), json_text.end(), nullptr, false); }

bool read(const Json& object, std::string_view key, std::uint64_t& out) {
  const auto found = object.find(key);
  if (found == object.end()) return true;
  if (!found->is_number_unsigned()) return false;
  out = found->get<std::uint64_t>();
  return true;
}

bool read(const Json& object, std::string_view key, std::int64_t& out) {
  const auto found = object.find(key);
  if (found == object.end()) return true;
  if (found->is_number_unsigned()) {
    const auto value = found->get<std::uint64_t>();
    if (value > static_cast<std::uint64_t>(INT64_MAX)) return false;
    out = static_cast<std::int64_t>(value);
    return true;
  }
  if (!found->is_number_integer()) return false;
  out = found->get<std::int64_t>();
  return true;
}

bool read(const Json& object, std::string_view key, std::chrono::nanoseconds& out) {
  std::int64_t ns = out.count();
  if (!read(object, key, ns)) return false;
  out = std::chrono::nanoseconds(ns);
  return true;
}

bool read(const Json& object, std::string_view key, std::string& out) {
  const auto found = object.find(key);
  if (found == object.end()) return true;
  if (!found->is_string()) return false;
  out = found->get<std::string>();
  return true;
}

bool read(const Json& object, std::string_view key, bool& out) {
  const auto found = object.find(key);
  if (found == object.end()) return true;
  if (!found->is_boolean()) return false;
  out = found->get<bool>();
  return true;
}

const Json* object_member(const Json& object, std::string_view key) {
  const auto found = object.find(key);
  return found != object.end() && found->is_object() ? &*found : nullptr;
}

std::optional<ApiError> error_in(const Json& answer) {
  const auto found = answer.find("error");
  if (found == answer.end()) return std::nullopt;
  ApiError error;
  if (found->is_object()) {
    std::int64_t code = 0;
    std::int64_t err_code = 0;
    read(*found, "code", code);
    read(*found, "err_code", err_code);
    read(*found, "description", error.description);
    error.code = static_cast<int>(code);
    error.err_code = static_cast<int>(err_code);
  }
  if (error.code == 0) error.code = -1;  // the server's, though it gave no code
  if (error.description.empty()) error.description = "an error without a description";
  return error;
}

}  // namespace jetfan::jetstream::detail
