#include "byte_size.hpp"

#include <array>
#include <charconv>
#include <limits>
#include <utility>

namespace jetfan {

namespace {

constexpr std::uint64_t kKi = 1ULL << 10;
constexpr std::uint64_t kMi = 1ULL << 20;
constexpr std::uint64_t kGi = 1ULL << 30;

// The whole table, spelled out rather than composed from prefix and suffix, so that the one place
// where the decimal and binary readings differ (a bare prefix is decimal) is visible at a glance.
constexpr std::array<std::pair<std::string_view, std::uint64_t>, 14> kUnits = {{
    {"", 1},
    {"B", 1},
    {"K", 1'000},
    {"KB", kKi},
    {"Ki", kKi},
    {"KiB", kKi},
    {"M", 1'000'000},
    {"MB", kMi},
    {"Mi", kMi},
    {"MiB", kMi},
    {"G", 1'000'000'000},
    {"GB", kGi},
    {"Gi", kGi},
    {"GiB", kGi},
}};

}  // namespace

std::optional<std::uint64_t> parse_byte_size(std::string_view text) {
  std::uint64_t value = 0;
  const char* end = text.data() + text.size();
  // from_chars takes no sign and no space for an unsigned type, and reports overflow.
  const auto [rest, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || rest == text.data()) return std::nullopt;
  const std::string_view unit(rest, static_cast<std::size_t>(end - rest));
  for (const auto& [name, scale] : kUnits) {
    if (name != unit) continue;
    if (value > std::numeric_limits<std::uint64_t>::max() / scale) return std::nullopt;
    return value * scale;
  }
  return std::nullopt;
}

}  // namespace jetfan
