#pragma once
// Standard base64 (RFC 4648 §4), as JetStream writes a stored message's data and headers. Pure.

#include <optional>
#include <string>
#include <string_view>

namespace jetfan::jetstream {

// The bytes `text` encodes, with or without its padding; nullopt when it is not base64.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace jetfan::jetstream
