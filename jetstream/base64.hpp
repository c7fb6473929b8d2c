#pragma once
// Standard base64 (RFC 4648 §4), as JetStream writes a stored message's data and headers, and as
// jetfan keeps a dead letter's original header block (daemon/dead_letters.hpp). Pure.

#include <optional>
#include <string>
#include <string_view>

namespace jetfan::jetstream {

// The bytes `text` encodes, with or without its padding; nullopt when it is not base64.
std::optional<std::string> base64_decode(std::string_view text);
// `bytes` in base64, padded with '=' to a multiple of four characters.
std::string base64_encode(std::string_view bytes);

}  // namespace jetfan::jetstream
