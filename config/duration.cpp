#include "duration.hpp"

#include <charconv>
#include <cstdint>
#include <limits>

namespace jetfan {

std::optional<Duration> parse_duration(std::string_view text) {
  std::uint64_t value = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  auto [rest, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || rest == begin) return std::nullopt;
  const std::string_view unit(rest, static_cast<std::size_t>(end - rest));
  std::uint64_t scale = 0;
  if (unit == "ms")
    scale = 1;
  else if (unit == "s")
    scale = 1000;
  else if (unit == "m")
    scale = 60'000;
  else if (unit == "h")
    scale = 3'600'000;
  else
    return std::nullopt;
  // Ten years is far beyond any timeout that makes sense and keeps later arithmetic
  // on time points well away from overflow.
  constexpr std::uint64_t kMaxMs = 10ULL * 365 * 24 * 3'600'000;
  if (value > kMaxMs / scale) return std::nullopt;
  return Duration(static_cast<Duration::rep>(value * scale));
}

}  // namespace jetfan
