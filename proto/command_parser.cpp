#include "command_parser.hpp"

namespace jetfan::proto {
namespace {

bool need_id(const std::vector<std::string_view>& words, Command& out, std::string& error) {
  if (words.size() < 2) {
    error = std::string(words[0]) + " needs a delivery id";
    return false;
  }
  const auto id = parse_number(words[1]);
  if (!id) {
    error = std::string(words[0]) + ": \"" + std::string(words[1]) + "\" is not a delivery id";
    return false;
  }
  out.id = *id;
  return true;
}

bool exact_words(const std::vector<std::string_view>& words, std::size_t count, std::string& error) {
  if (words.size() == count) return true;
  error = std::string(words[0]) + " takes " + std::to_string(count - 1) + " argument(s), got " +
          std::to_string(words.size() - 1);
  return false;
}

}  // namespace

bool parse_command_line(std::string_view line, Command& out, std::string& error,
                        std::vector<std::string_view>& words) {
  split_words(line, words);
  if (words.empty()) {
    error = "empty line";
    return false;
  }
  out = Command{};
  const auto verb = words[0];
  if (equals_ignoring_case(verb, "ACK")) {
    out.verb = Verb::kAck;
    return need_id(words, out, error) && exact_words(words, 2, error);
  }
  if (equals_ignoring_case(verb, "NAK")) {
    out.verb = Verb::kNak;
    if (!need_id(words, out, error)) return false;
    if (words.size() == 3) {
      out.delay_ms = parse_number(words[2]);
      if (!out.delay_ms) {
        error = "NAK: \"" + std::string(words[2]) + "\" is not a delay in milliseconds";
        return false;
      }
      return true;
    }
    return exact_words(words, 2, error);
  }
  if (equals_ignoring_case(verb, "TERM")) {
    out.verb = Verb::kTerm;
    if (!need_id(words, out, error)) return false;
    if (words.size() > 2) {
      // The reason is the rest of the line as written, spaces included.
      const auto start = static_cast<std::size_t>(words[2].data() - line.data());
      out.reason = std::string(line.substr(start));
    }
    return true;
  }
  if (equals_ignoring_case(verb, "WIP")) {
    out.verb = Verb::kWip;
    return need_id(words, out, error) && exact_words(words, 2, error);
  }
  if (equals_ignoring_case(verb, "HELLO")) {
    out.verb = Verb::kHello;
    if (!exact_words(words, 3, error)) {
      error = "HELLO needs a handler name and a protocol version, e.g. \"HELLO builder 1\"";
      return false;
    }
    out.handler = std::string(words[1]);
    const auto version = parse_number(words[2]);
    if (!version || *version > 1'000'000) {
      error = "HELLO: \"" + std::string(words[2]) + "\" is not a protocol version";
      return false;
    }
    out.version = static_cast<std::uint32_t>(*version);
    return true;
  }
  if (equals_ignoring_case(verb, "PING")) {
    out.verb = Verb::kPing;
    return exact_words(words, 1, error);
  }
  if (equals_ignoring_case(verb, "PONG")) {
    out.verb = Verb::kPong;
    return exact_words(words, 1, error);
  }
  std::string shown(verb.substr(0, 32));
  for (char& c : shown) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  error = "unknown command \"" + shown + "\"";
  return false;
}

CommandParser::Result CommandParser::fail(std::string why) {
  error_ = std::move(why);
  return Result::kError;
}

CommandParser::Result CommandParser::parse(std::string_view& input, Command& out) {
  if (!error_.empty()) return Result::kError;
  std::string_view line;
  do {  // blank lines are skipped, so a person typing into socat may press Enter freely
    switch (lines_.next(input, line)) {
      case LineReader::Result::kNeedMore: return Result::kNeedMore;
      case LineReader::Result::kTooLong:
        return fail("control line longer than " + std::to_string(kMaxCommandLine) + " bytes");
      case LineReader::Result::kLine: break;
    }
  } while (line.find_first_not_of(" \t") == std::string_view::npos);
  std::string why;
  if (!parse_command_line(line, out, why, words_)) return fail(std::move(why));
  return Result::kCommand;
}

}  // namespace jetfan::proto
