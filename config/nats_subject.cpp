#include "nats_subject.hpp"

namespace jetfan {
namespace {

// The token of `text` that starts at `from`, and where the next one starts (npos after the last).
std::string_view token_at(std::string_view text, std::size_t& from) {
  const std::size_t dot = text.find('.', from);
  const std::string_view token = text.substr(from, dot == std::string_view::npos ? std::string_view::npos : dot - from);
  from = dot == std::string_view::npos ? std::string_view::npos : dot + 1;
  return token;
}

}  // namespace

std::optional<std::string> subject_pattern_error(std::string_view pattern) {
  if (pattern.empty()) return "is empty";
  for (const char c : pattern) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x21 || byte == 0x7f) return "has a blank or a control character";
  }
  for (std::size_t from = 0; from != std::string_view::npos;) {
    const std::string_view token = token_at(pattern, from);
    if (token.empty()) return "has an empty token (a leading, trailing or doubled '.')";
    if (token != "*" && token != ">" && token.find_first_of("*>") != std::string_view::npos) {
      return "has '*' or '>' inside a token: a wildcard is a whole token";
    }
    if (token == ">" && from != std::string_view::npos) return "has '>' before its last token";
  }
  return std::nullopt;
}

bool subject_matches(std::string_view pattern, std::string_view subject) {
  std::size_t p = 0;
  std::size_t s = 0;
  while (p != std::string_view::npos && s != std::string_view::npos) {
    const std::string_view want = token_at(pattern, p);
    if (want == ">") return true;  // one or more tokens are left: s is not past the end
    const std::string_view got = token_at(subject, s);
    if (want != "*" && want != got) return false;
  }
  return p == std::string_view::npos && s == std::string_view::npos;
}

}  // namespace jetfan
