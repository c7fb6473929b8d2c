#include "protocol.hpp"

#include <charconv>

namespace jetfan::proto {

const char* to_string(Verb verb) {
  switch (verb) {
    case Verb::kHello:
      return "HELLO";
    case Verb::kAck:
      return "ACK";
    case Verb::kNak:
      return "NAK";
    case Verb::kTerm:
      return "TERM";
    case Verb::kWip:
      return "WIP";
    case Verb::kPing:
      return "PING";
    case Verb::kPong:
      return "PONG";
    case Verb::kPub:
      return "PUB";
  }
  return "?";
}

const char* to_string(PublishError code) {
  switch (code) {
    case PublishError::kNotAllowed:
      return "not-allowed";
    case PublishError::kBadSubject:
      return "bad-subject";
    case PublishError::kBadHeaders:
      return "bad-headers";
    case PublishError::kTooLarge:
      return "too-large";
    case PublishError::kNotInFlight:
      return "not-in-flight";
    case PublishError::kBusyId:
      return "busy-id";
    case PublishError::kNoStream:
      return "no-stream";
    case PublishError::kRefused:
      return "refused";
    case PublishError::kTimeout:
      return "timeout";
    case PublishError::kServerDown:
      return "server-down";
  }
  return "?";
}

const char* to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::kNone:
      return "none";
    case ErrorCode::kLineTooLong:
      return "line-too-long";
    case ErrorCode::kEmptyLine:
      return "empty-line";
    case ErrorCode::kUnknownVerb:
      return "unknown-verb";
    case ErrorCode::kMissingArgument:
      return "missing-argument";
    case ErrorCode::kTooManyArguments:
      return "too-many-arguments";
    case ErrorCode::kBadNumber:
      return "bad-number";
    case ErrorCode::kHeaderExceedsTotal:
      return "header-exceeds-total";
    case ErrorCode::kBodyTooLarge:
      return "body-too-large";
    case ErrorCode::kBadBodyEnd:
      return "bad-body-end";
    case ErrorCode::kBadTraceparent:
      return "bad-traceparent";
  }
  return "?";
}

void split_words(std::string_view line, std::vector<std::string_view>& words) {
  words.clear();
  std::size_t at = 0;
  while (at < line.size()) {
    while (at < line.size() && (line[at] == ' ' || line[at] == '\t')) ++at;
    const std::size_t start = at;
    while (at < line.size() && line[at] != ' ' && line[at] != '\t') ++at;
    if (at > start) words.push_back(line.substr(start, at - start));
  }
}

std::optional<std::uint64_t> parse_number(std::string_view word) {
  if (word.empty() || word.size() > 20) return std::nullopt;
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), value);
  if (ec != std::errc() || end != word.data() + word.size()) return std::nullopt;
  return value;
}

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const char x = (a[i] >= 'a' && a[i] <= 'z') ? static_cast<char>(a[i] - 32) : a[i];
    const char y = (b[i] >= 'a' && b[i] <= 'z') ? static_cast<char>(b[i] - 32) : b[i];
    if (x != y) return false;
  }
  return true;
}

bool is_traceparent(std::string_view word) {
  if (word.size() != kTraceparentSize || word.starts_with("ff")) return false;
  bool trace_id = false;   // a digit of the trace id is not 0
  bool parent_id = false;  // likewise of the parent id
  for (std::size_t i = 0; i < word.size(); ++i) {
    const char c = word[i];
    if (i == 2 || i == 35 || i == 52) {
      if (c != '-') return false;
    } else if ((c < '0' || c > '9') && (c < 'a' || c > 'f')) {
      return false;
    } else if (c != '0') {
      trace_id = trace_id || (i > 2 && i < 35);
      parent_id = parent_id || (i > 35 && i < 52);
    }
  }
  return trace_id && parent_id;
}

std::uint32_t negotiated_version(std::uint32_t asked) { return asked < kLatestVersion ? asked : kLatestVersion; }

bool is_publish_subject(std::string_view subject) {
  if (subject.empty() || subject.size() > kMaxSubject) return false;
  std::size_t token_start = 0;
  for (std::size_t i = 0; i <= subject.size(); ++i) {
    if (i == subject.size() || subject[i] == '.') {
      const auto token = subject.substr(token_start, i - token_start);
      if (token.empty() || token == "*" || token == ">") return false;
      token_start = i + 1;
      continue;
    }
    const auto byte = static_cast<unsigned char>(subject[i]);
    if (byte < 0x21 || byte == 0x7f) return false;
  }
  return true;
}

bool is_header_block(std::string_view headers) {
  constexpr std::string_view kStart = "NATS/1.0";
  constexpr std::string_view kEnd = "\r\n\r\n";
  if (headers.empty()) return true;
  return headers.size() >= kStart.size() + kEnd.size() && headers.substr(0, kStart.size()) == kStart &&
         (headers[kStart.size()] == '\r' || headers[kStart.size()] == ' ') &&
         headers.substr(headers.size() - kEnd.size()) == kEnd;
}

}  // namespace jetfan::proto
