#include "jetstream_subject.hpp"

#include <bit>
#include <charconv>
#include <cstring>

namespace jetfan::jetstream {
namespace {

// Eight ASCII digits at `p` as a number, or nullopt if one of them is not a digit. The bytes are
// read as one little-endian word (p[0] in the low byte), checked together, and combined in three
// steps: pairs of digits into 16-bit lanes, pairs of those into 32-bit lanes, then the two halves.
std::optional<std::uint64_t> eight_digits(const char* p) {
  std::uint64_t word;
  std::memcpy(&word, p, sizeof word);
  constexpr std::uint64_t kHighNibbles = 0xF0F0F0F0F0F0F0F0;
  // A byte is a digit when its high nibble is 3 and adding 6 does not carry it to 4 (past '9').
  if (((word & kHighNibbles) | (((word + 0x0606060606060606) & kHighNibbles) >> 4)) != 0x3333333333333333) {
    return std::nullopt;
  }
  std::uint64_t lanes = word - 0x3030303030303030;              // byte i: digit i
  lanes = (lanes * 10 + (lanes >> 8)) & 0x00FF00FF00FF00FF;     // 16-bit lane k: digits 2k, 2k+1
  lanes = (lanes * 100 + (lanes >> 16)) & 0x0000FFFF0000FFFF;   // 32-bit lane k: digits 4k..4k+3
  return (lanes * 10000 + (lanes >> 32)) & 0x00000000FFFFFFFF;  // digits 0..7
}

// Four numbers per message, the timestamp nineteen digits long: eight digits at a time where the
// machine is little-endian, and no overflow check, since nineteen digits cannot overflow 64 bits.
// Longer tokens take the checked path.
std::optional<std::uint64_t> number(std::string_view token) {
  if (token.empty()) return std::nullopt;
  if (token.size() > 19) {
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
    if (ec != std::errc() || end != token.data() + token.size()) return std::nullopt;
    return value;
  }
  std::uint64_t value = 0;
  const char* p = token.data();
  std::size_t left = token.size();
  if constexpr (std::endian::native == std::endian::little) {
    for (; left >= 8; p += 8, left -= 8) {
      const auto eight = eight_digits(p);
      if (!eight) return std::nullopt;
      value = value * 100'000'000 + *eight;
    }
  }
  for (; left > 0; ++p, --left) {
    const unsigned digit = static_cast<unsigned>(static_cast<unsigned char>(*p)) - '0';
    if (digit > 9) return std::nullopt;
    value = value * 10 + digit;
  }
  return value;
}

}  // namespace

std::optional<std::string_view> key_of(std::string_view subject, std::string_view prefix) {
  if (subject.size() <= prefix.size() || subject.substr(0, prefix.size()) != prefix) return std::nullopt;
  return subject.substr(prefix.size());
}

std::optional<AckSubject> parse_ack_subject(std::string_view reply) {
  // Called once per message: the token starts are found with memchr into a fixed array, and the
  // four numbers read in one loop.
  constexpr std::string_view kPrefix = "$JS.ACK.";
  constexpr std::size_t kMaxTokens = 16;
  if (reply.size() <= kPrefix.size() || reply.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  const char* const end = reply.data() + reply.size();
  const char* starts[kMaxTokens];  // of the tokens after $JS.ACK.
  std::size_t count = 0;
  for (const char* token = reply.data() + kPrefix.size();;) {
    if (count == kMaxTokens) return std::nullopt;
    starts[count++] = token;
    const auto* dot = static_cast<const char*>(std::memchr(token, '.', static_cast<std::size_t>(end - token)));
    if (dot == nullptr) break;
    token = dot + 1;
  }
  // The older form has exactly nine tokens in all; the newer adds domain and account hash after ACK.
  if (count != 7 && count < 9) return std::nullopt;
  const std::size_t first = count == 7 ? 2 : 4;
  // <delivered>.<stream seq>.<consumer seq>.<timestamp>: the first three must be numbers.
  std::uint64_t values[4];
  for (std::size_t i = 0; i < 4; ++i) {
    const char* start = starts[first + i];
    const char* stop = first + i + 1 < count ? starts[first + i + 1] - 1 : end;  // at its dot, or the end
    const auto value = number(std::string_view(start, static_cast<std::size_t>(stop - start)));
    if (!value && i < 3) return std::nullopt;
    values[i] = value.value_or(0);
  }
  return AckSubject{values[0], values[1], values[2], values[3]};
}

std::string pull_subject(std::string_view stream, std::string_view durable) {
  std::string subject = "$JS.API.CONSUMER.MSG.NEXT.";
  subject.append(stream);
  subject.push_back('.');
  subject.append(durable);
  return subject;
}

}  // namespace jetfan::jetstream
