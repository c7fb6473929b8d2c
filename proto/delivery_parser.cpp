#include "delivery_parser.hpp"

namespace jetfan::proto {
namespace {

// Up to `limit` bytes of a word, safe to put in an error message.
std::string shown(std::string_view word, std::size_t limit = 32) {
  std::string out(word.substr(0, limit));
  for (char& c : out) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  return out;
}

}  // namespace

DeliveryParser::Result DeliveryParser::fail(ErrorCode code, std::string why) {
  code_ = code;
  error_ = std::move(why);
  return Result::kError;
}

DeliveryParser::Result DeliveryParser::parse_msg_line() {
  const auto& words = words_;
  const std::size_t expected = version_ >= kVersion3 ? 11 : version_ >= kVersion2 ? 10 : 7;
  if (words.size() != expected) {
    return fail(words.size() < expected ? ErrorCode::kMissingArgument : ErrorCode::kTooManyArguments,
                "MSG needs " + std::to_string(expected - 1) + " arguments in protocol version " +
                    std::to_string(version_) + ", got " + std::to_string(words.size() - 1));
  }
  std::optional<std::uint64_t> published = 0;
  std::optional<std::uint64_t> server_deliveries = 0;
  if (expected >= 10) {
    published = parse_number(words[7]);
    server_deliveries = parse_number(words[9]);
  }
  const auto id = parse_number(words[1]);
  const auto seq = parse_number(words[3]);
  const auto deliveries = parse_number(words[4]);
  const auto header_bytes = parse_number(words[5]);
  const auto total_bytes = parse_number(words[6]);
  if (!id || !seq || !deliveries || !header_bytes || !total_bytes || !published || !server_deliveries)
    return fail(ErrorCode::kBadNumber, "MSG: malformed number");
  if (*header_bytes > *total_bytes) return fail(ErrorCode::kHeaderExceedsTotal, "MSG: header bytes exceed total bytes");
  if (*total_bytes > kMaxBody) {
    return fail(ErrorCode::kBodyTooLarge, "MSG: body larger than " + std::to_string(kMaxBody) + " bytes");
  }
  std::string_view traceparent;  // "-": none
  if (expected == 11 && words[10] != "-") {
    traceparent = words[10];
    if (!is_traceparent(traceparent)) {
      return fail(ErrorCode::kBadTraceparent,
                  "MSG: traceparent \"" + shown(traceparent, 64) +
                      "\" is neither - nor a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>)");
    }
  }
  body_frame_ = Frame{};
  body_frame_.kind = Frame::Kind::kMsg;
  auto& d = body_frame_.delivery;
  d.id = *id;
  d.key = std::string(words[2]);
  d.stream_seq = *seq;
  d.deliveries = *deliveries;
  if (expected >= 10) {
    d.published_ns = *published;
    d.subject = std::string(words[8]);
    d.server_deliveries = *server_deliveries;
    d.traceparent = std::string(traceparent);
  }
  body_.start(*header_bytes, *total_bytes, d.headers, d.payload);
  return Result::kNeedMore;
}

// "PUBOK <id> <stream> <seq> <duplicate>" (stored) or "PUBERR <id> <code> [<reason>]".
DeliveryParser::Result DeliveryParser::parse_publish_answer(std::string_view line, bool stored, Frame& out) {
  const auto& words = words_;
  const char* verb = stored ? "PUBOK" : "PUBERR";
  if (stored ? words.size() != 5 : words.size() < 3) {
    return fail(
        words.size() < 3 || (stored && words.size() < 5) ? ErrorCode::kMissingArgument : ErrorCode::kTooManyArguments,
        std::string(verb) + (stored ? " takes a request id, a stream, a sequence and 0 or 1"
                                    : " takes a request id, a code and perhaps a reason"));
  }
  const auto id = parse_number(words[1]);
  if (!id) return fail(ErrorCode::kBadNumber, std::string(verb) + ": malformed request id");
  out.publish.id = *id;
  if (!stored) {
    out.kind = Frame::Kind::kPubErr;
    out.publish.code = std::string(words[2]);
    if (words.size() > 3)
      out.publish.reason = std::string(line.substr(static_cast<std::size_t>(words[3].data() - line.data())));
    return Result::kFrame;
  }
  const auto seq = parse_number(words[3]);
  if (!seq || (words[4] != "0" && words[4] != "1")) return fail(ErrorCode::kBadNumber, "PUBOK: malformed number");
  out.kind = Frame::Kind::kPubOk;
  out.publish.stream = std::string(words[2]);
  out.publish.seq = *seq;
  out.publish.duplicate = words[4] == "1";
  return Result::kFrame;
}

DeliveryParser::Result DeliveryParser::parse_line(std::string_view line, Frame& out) {
  auto& words = words_;
  split_words(line, words);
  if (words.empty()) return fail(ErrorCode::kEmptyLine, "empty line");
  const auto verb = words[0];
  if (equals_ignoring_case(verb, "MSG")) return parse_msg_line();
  out = Frame{};
  if (equals_ignoring_case(verb, "READY")) {
    if (words.size() < 5) {
      return fail(ErrorCode::kMissingArgument, "READY needs a version, a handler, a limit and patterns");
    }
    const auto version = parse_number(words[1]);
    const auto limit = parse_number(words[3]);
    if (!version || !limit || *version > kMaxSmallNumber || *limit > kMaxSmallNumber) {
      return fail(ErrorCode::kBadNumber, "READY: malformed number");
    }
    out.kind = Frame::Kind::kReady;
    out.ready.version = static_cast<std::uint32_t>(*version);
    out.ready.handler = std::string(words[2]);
    out.ready.max_unconfirmed = static_cast<std::uint32_t>(*limit);
    // Version 0 is no version; whatever READY says, the MSGs after it are laid out in that version.
    if (*version > 0) version_ = static_cast<std::uint32_t>(*version);
    for (std::size_t i = 4; i < words.size(); ++i) out.ready.patterns.emplace_back(words[i]);
    return Result::kFrame;
  }
  if (equals_ignoring_case(verb, "ERR")) {
    out.kind = Frame::Kind::kErr;
    if (words.size() > 1) out.error = std::string(line.substr(static_cast<std::size_t>(words[1].data() - line.data())));
    return Result::kFrame;
  }
  if (version_ >= kVersion3) {
    const bool stored = equals_ignoring_case(verb, "PUBOK");
    if (stored || equals_ignoring_case(verb, "PUBERR")) return parse_publish_answer(line, stored, out);
  }
  const bool ping = equals_ignoring_case(verb, "PING");
  if (ping || equals_ignoring_case(verb, "PONG")) {
    if (words.size() > 1) {
      return fail(ErrorCode::kTooManyArguments, std::string(ping ? "PING" : "PONG") + " takes no arguments");
    }
    out.kind = ping ? Frame::Kind::kPing : Frame::Kind::kPong;
    return Result::kFrame;
  }
  return fail(ErrorCode::kUnknownVerb, "unknown frame \"" + shown(verb) + "\"");
}

DeliveryParser::Result DeliveryParser::parse(std::string_view& input, Frame& out) {
  if (code_ != ErrorCode::kNone) return Result::kError;
  for (;;) {
    if (body_.active()) {
      switch (body_.read(input)) {
        case BodyReader::Result::kNeedMore:
          return Result::kNeedMore;
        case BodyReader::Result::kBadEnd:
          return fail(ErrorCode::kBadBodyEnd, "MSG body not followed by \\r\\n");
        case BodyReader::Result::kDone:
          out = std::move(body_frame_);
          return Result::kFrame;
      }
    }
    std::string_view line;
    switch (lines_.next(input, line)) {
      case LineReader::Result::kNeedMore:
        return Result::kNeedMore;
      case LineReader::Result::kTooLong:
        return fail(ErrorCode::kLineTooLong, "control line longer than " + std::to_string(kMaxDeliveryLine) + " bytes");
      case LineReader::Result::kLine:
        break;
    }
    const Result result = parse_line(line, out);
    if (result != Result::kNeedMore) return result;  // a frame, or an error
    // A MSG line was read; its body follows.
  }
}

}  // namespace jetfan::proto
