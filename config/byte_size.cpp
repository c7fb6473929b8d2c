#include "byte_size.hpp"

#include <charconv>
#include <limits>

namespace jetfan {

std::optional<std::uint64_t> parse_byte_size(std::string_view text) {
  std::uint64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [rest, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || rest == text.data()) return std::nullopt;
  const std::string_view unit(rest, static_cast<std::size_t>(end - rest));
  std::uint64_t scale = 0;
  if (unit.empty() || unit == "B")
    scale = 1;
  else if (unit == "KiB")
    scale = 1ULL << 10;
  else if (unit == "MiB")
    scale = 1ULL << 20;
  else if (unit == "GiB")
    scale = 1ULL << 30;
  else
    return std::nullopt;
  if (value > std::numeric_limits<std::uint64_t>::max() / scale) return std::nullopt;
  return value * scale;
}

}  // namespace jetfan
