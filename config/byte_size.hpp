#pragma once
// Sizes as written in jetfan.yaml: a whole number of bytes, or one with a binary unit: "4096",
// "512KiB", "64MiB", "1GiB". Pure.

#include <cstdint>
#include <optional>
#include <string_view>

namespace jetfan {

// nullopt for anything else: decimal units (MB is ambiguous), fractions, signs, overflow.
std::optional<std::uint64_t> parse_byte_size(std::string_view text);

}  // namespace jetfan
