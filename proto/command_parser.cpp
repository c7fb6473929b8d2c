#include "command_parser.hpp"

namespace jetfan::proto {
namespace {

// One line's verdict: the code and the message for people, set together.
struct Failure {
  ErrorCode& code;
  std::string& error;
  bool operator()(ErrorCode why, std::string message) const {
    code = why;
    error = std::move(message);
    return false;
  }
};

bool need_id(const std::vector<std::string_view>& words, Command& out, const Failure& fail) {
  if (words.size() < 2) return fail(ErrorCode::kMissingArgument, std::string(words[0]) + " needs a delivery id");
  const auto id = parse_number(words[1]);
  if (!id) {
    return fail(ErrorCode::kBadNumber,
                std::string(words[0]) + ": \"" + std::string(words[1]) + "\" is not a delivery id");
  }
  out.id = *id;
  return true;
}

bool exact_words(const std::vector<std::string_view>& words, std::size_t count, const Failure& fail) {
  if (words.size() == count) return true;
  return fail(words.size() < count ? ErrorCode::kMissingArgument : ErrorCode::kTooManyArguments,
              std::string(words[0]) + " takes " + std::to_string(count - 1) + " argument(s), got " +
                  std::to_string(words.size() - 1));
}

// The rest of `line` from `word` on, as written, spaces included.
std::string rest_of_line(std::string_view line, std::string_view word) {
  return std::string(line.substr(static_cast<std::size_t>(word.data() - line.data())));
}

}  // namespace

bool parse_command_line(std::string_view line, std::uint32_t version, Command& out, ErrorCode& code, std::string& error,
                        std::vector<std::string_view>& words) {
  const Failure fail{code, error};
  // Nearly every line is "ACK <id>" as the clients write it: read that without splitting words.
  // Any other spelling (lower case, tabs, extra spaces) takes the general path to the same result.
  constexpr std::string_view kAck = "ACK ";
  if (line.size() > kAck.size() && line.substr(0, kAck.size()) == kAck) {
    if (const auto id = parse_number(line.substr(kAck.size()))) {
      out.verb = Verb::kAck;
      out.id = *id;
      out.handler.clear();
      out.version = 0;
      out.delay_ms.reset();
      out.reason.clear();
      return true;  // the PUB fields are left as they were: they mean nothing for an ACK
    }
  }
  split_words(line, words);
  if (words.empty()) return fail(ErrorCode::kEmptyLine, "empty line");
  out = Command{};
  const auto verb = words[0];
  if (equals_ignoring_case(verb, "ACK")) {
    out.verb = Verb::kAck;
    return need_id(words, out, fail) && exact_words(words, 2, fail);
  }
  if (equals_ignoring_case(verb, "NAK")) {
    out.verb = Verb::kNak;
    if (!need_id(words, out, fail)) return false;
    if (words.size() == 2) return true;
    // From version 3 on, "-" stands for "no delay" so that a reason can follow without one.
    const bool with_reason = version >= kVersion3;
    if (!(with_reason && words[2] == "-")) {
      out.delay_ms = parse_number(words[2]);
      if (!out.delay_ms) {
        return fail(ErrorCode::kBadNumber, "NAK: \"" + std::string(words[2]) + "\" is not a delay in milliseconds");
      }
    }
    if (words.size() == 3) return true;
    if (!with_reason) return exact_words(words, 2, fail);  // says "takes 1 argument(s)", as it always did
    out.reason = rest_of_line(line, words[3]);
    return true;
  }
  if (equals_ignoring_case(verb, "TERM")) {
    out.verb = Verb::kTerm;
    if (!need_id(words, out, fail)) return false;
    if (words.size() > 2) out.reason = rest_of_line(line, words[2]);
    return true;
  }
  if (equals_ignoring_case(verb, "WIP")) {
    out.verb = Verb::kWip;
    return need_id(words, out, fail) && exact_words(words, 2, fail);
  }
  if (equals_ignoring_case(verb, "HELLO")) {
    out.verb = Verb::kHello;
    if (!exact_words(words, 3, fail)) {
      error = "HELLO needs a handler name and a protocol version, e.g. \"HELLO builder 1\"";
      return false;
    }
    out.handler = std::string(words[1]);
    const auto version = parse_number(words[2]);
    if (!version || *version > kMaxSmallNumber) {
      return fail(ErrorCode::kBadNumber, "HELLO: \"" + std::string(words[2]) + "\" is not a protocol version");
    }
    out.version = static_cast<std::uint32_t>(*version);
    return true;
  }
  if (version >= kVersion3 && equals_ignoring_case(verb, "PUB")) {
    out.verb = Verb::kPub;
    // PUB <request-id> <subject> <header-bytes> <total-bytes> [<delivery-id> <index>]
    if (words.size() < 5 || words.size() == 6 || words.size() > 7) {
      return fail(words.size() < 5 || words.size() == 6 ? ErrorCode::kMissingArgument : ErrorCode::kTooManyArguments,
                  "PUB takes a request id, a subject, header bytes and total bytes, and perhaps a delivery id "
                  "and an index; got " +
                      std::to_string(words.size() - 1) + " argument(s)");
    }
    const auto id = parse_number(words[1]);
    const auto header_bytes = parse_number(words[3]);
    const auto total_bytes = parse_number(words[4]);
    if (!id || !header_bytes || !total_bytes) return fail(ErrorCode::kBadNumber, "PUB: malformed number");
    if (*header_bytes > *total_bytes)
      return fail(ErrorCode::kHeaderExceedsTotal, "PUB: header bytes exceed total bytes");
    if (*total_bytes > kMaxBody) {
      return fail(ErrorCode::kBodyTooLarge, "PUB: body larger than " + std::to_string(kMaxBody) + " bytes");
    }
    if (words.size() == 7) {
      out.tied_to = parse_number(words[5]);
      const auto index = parse_number(words[6]);
      if (!out.tied_to || !index) return fail(ErrorCode::kBadNumber, "PUB: malformed delivery id or index");
      out.tie_index = *index;
    }
    out.id = *id;
    out.subject = std::string(words[2]);
    out.header_bytes = *header_bytes;
    out.body_bytes = *total_bytes;
    return true;
  }
  if (equals_ignoring_case(verb, "PING")) {
    out.verb = Verb::kPing;
    return exact_words(words, 1, fail);
  }
  if (equals_ignoring_case(verb, "PONG")) {
    out.verb = Verb::kPong;
    return exact_words(words, 1, fail);
  }
  std::string shown(verb.substr(0, 32));
  for (char& c : shown) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  return fail(ErrorCode::kUnknownVerb, "unknown command \"" + shown + "\"");
}

CommandParser::Result CommandParser::fail(ErrorCode code, std::string why) {
  code_ = code;
  error_ = std::move(why);
  return Result::kError;
}

CommandParser::Result CommandParser::parse(std::string_view& input, Command& out) {
  if (code_ != ErrorCode::kNone) return Result::kError;
  if (!body_.active()) {
    std::string_view line;
    do {  // blank lines are skipped, so a person typing into socat may press Enter freely
      switch (lines_.next(input, line)) {
        case LineReader::Result::kNeedMore:
          return Result::kNeedMore;
        case LineReader::Result::kTooLong:
          return fail(ErrorCode::kLineTooLong,
                      "control line longer than " + std::to_string(kMaxCommandLine) + " bytes");
        case LineReader::Result::kLine:
          break;
      }
    } while (line.find_first_not_of(" \t") == std::string_view::npos);
    if (!parse_command_line(line, version_, out, code_, error_, words_)) return Result::kError;
    if (out.verb != Verb::kPub) return Result::kCommand;
    pending_ = std::move(out);
    pending_.dropped = pending_.body_bytes > max_publish_body_;
    body_.start(pending_.header_bytes, pending_.body_bytes, pending_.headers, pending_.payload, !pending_.dropped);
  }
  switch (body_.read(input)) {
    case BodyReader::Result::kNeedMore:
      return Result::kNeedMore;
    case BodyReader::Result::kBadEnd:
      return fail(ErrorCode::kBadBodyEnd, "PUB body not followed by \\r\\n");
    case BodyReader::Result::kDone:
      break;
  }
  out = std::move(pending_);
  return Result::kCommand;
}

}  // namespace jetfan::proto
