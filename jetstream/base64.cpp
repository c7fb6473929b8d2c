#include "base64.hpp"

#include <array>
#include <cstdint>

namespace jetfan::jetstream {

std::optional<std::string> base64_decode(std::string_view text) {
  static constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  static const std::array<int, 256> kValue = [] {
    std::array<int, 256> value{};
    value.fill(-1);
    for (std::size_t i = 0; i < kAlphabet.size(); ++i)
      value[static_cast<unsigned char>(kAlphabet[i])] = static_cast<int>(i);
    return value;
  }();
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  std::string out;
  out.reserve(text.size() * 3 / 4);
  std::uint32_t bits = 0;
  int count = 0;
  for (const char c : text) {
    const int v = kValue[static_cast<unsigned char>(c)];
    if (v < 0) return std::nullopt;
    bits = (bits << 6) | static_cast<std::uint32_t>(v);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out.push_back(static_cast<char>((bits >> count) & 0xff));
    }
  }
  if (count >= 6) return std::nullopt;  // one character left over: no whole byte
  return out;
}

}  // namespace jetfan::jetstream
