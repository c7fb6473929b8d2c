#include "jetstream_subject.hpp"

#include <charconv>

namespace jetfan {
namespace {

// Four numbers per message: a plain digit loop rather than from_chars, which checks for overflow at
// every digit. Nineteen digits cannot overflow 64 bits; longer tokens take the checked path.
std::optional<std::uint64_t> number(std::string_view token) {
  if (token.empty()) return std::nullopt;
  if (token.size() > 19) {
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
    if (ec != std::errc() || end != token.data() + token.size()) return std::nullopt;
    return value;
  }
  std::uint64_t value = 0;
  for (const char c : token) {
    const unsigned digit = static_cast<unsigned>(static_cast<unsigned char>(c)) - '0';
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
  // Called once per message: tokens go into a fixed array, not a vector.
  constexpr std::size_t kMaxTokens = 16;
  std::string_view tokens[kMaxTokens];
  std::size_t count = 0;
  std::size_t start = 0;
  for (;;) {
    if (count == kMaxTokens) return std::nullopt;
    const std::size_t dot = reply.find('.', start);
    tokens[count++] = reply.substr(start, dot == std::string_view::npos ? reply.npos : dot - start);
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  if (count < 9 || tokens[0] != "$JS" || tokens[1] != "ACK") return std::nullopt;
  // The older form has exactly nine tokens; the newer adds domain and account hash after ACK.
  if (count != 9 && count < 11) return std::nullopt;
  const std::size_t first = count == 9 ? 4 : 6;
  const auto deliveries = number(tokens[first]);
  const auto stream_seq = number(tokens[first + 1]);
  const auto consumer_seq = number(tokens[first + 2]);
  if (!deliveries || !stream_seq || !consumer_seq) return std::nullopt;
  return AckSubject{*deliveries, *stream_seq, *consumer_seq, number(tokens[first + 3]).value_or(0)};
}

std::string pull_subject(std::string_view stream, std::string_view durable) {
  std::string subject = "$JS.API.CONSUMER.MSG.NEXT.";
  subject.append(stream);
  subject.push_back('.');
  subject.append(durable);
  return subject;
}

}  // namespace jetfan
