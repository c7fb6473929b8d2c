#pragma once
// Reading members of a parsed JetStream answer without exceptions (nlohmann's value() throws on a
// member of another type). Internal to jetstream/: the public headers take and give text. Pure.

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "api_error.hpp"

namespace jetfan::jetstream::detail {

using Json = nlohmann::json;

// `json_text` parsed, or a discarded value when it is not JSON.
Json parse(std::string_view json_text);

// Each reads member `key` of `object` into `out`. True when the member is absent (out untouched)
// or of the type asked for; false when it is there with another type (out untouched).
bool read(const Json& object, std::string_view key, std::uint64_t& out);
bool read(const Json& object, std::string_view key, std::int64_t& out);
bool read(const Json& object, std::string_view key, std::chrono::nanoseconds& out);  // an integer of ns
bool read(const Json& object, std::string_view key, std::string& out);
bool read(const Json& object, std::string_view key, bool& out);

// Member `key` of `object` when it is an object; nullptr otherwise.
const Json* object_member(const Json& object, std::string_view key);

// The error member of an answer, as ApiError; nullopt when it has none.
std::optional<ApiError> error_in(const Json& answer);

}  // namespace jetfan::jetstream::detail
