// PUB, PUBOK and PUBERR beyond the conformance vectors (proto/vectors/*-publish.json): a body over
// the parser's limit is read and dropped, and what makes a subject and a header block publishable.

#include <catch2/catch.hpp>

#include <set>

#include "command_parser.hpp"
#include "delivery_parser.hpp"
#include "encoder.hpp"

using namespace jetfan::proto;

namespace {

// Parses `stream` fed `step` bytes at a time on a version 3 connection; the commands, or an error.
std::vector<Command> parse_v3(CommandParser& parser, const std::string& stream, std::size_t step) {
  parser.set_version(kVersion3);
  std::vector<Command> out;
  Command command;
  for (std::size_t from = 0; from < stream.size(); from += step) {
    const std::string chunk = stream.substr(from, step);
    std::string_view input(chunk);
    for (;;) {
      const auto result = parser.parse(input, command);
      if (result == CommandParser::Result::kCommand) {
        out.push_back(command);
        continue;
      }
      REQUIRE(result == CommandParser::Result::kNeedMore);
      REQUIRE(input.empty());
      break;
    }
  }
  return out;
}

}  // namespace

TEST_CASE("publish: a PUB body over the parser's limit is read and dropped, and the stream goes on", "[unit]") {
  std::string stream;
  append_pub(stream, 1, "a.b", "", std::string(100, 'x'));
  append_pub(stream, 2, "a.b", "NATS/1.0\r\nA: 1\r\n\r\n", std::string(50, 'y'), 7, 0);  // 68 bytes: kept
  append_ack(stream, 7);
  for (const std::size_t step : {stream.size(), std::size_t{1}, std::size_t{7}}) {
    INFO("fed " << step << " bytes at a time");
    CommandParser parser;
    parser.set_max_publish_body(99);
    const auto commands = parse_v3(parser, stream, step);
    REQUIRE(commands.size() == 3);
    CHECK(commands[0].verb == Verb::kPub);
    CHECK(commands[0].dropped);
    CHECK(commands[0].body_bytes == 100);
    CHECK(commands[0].payload.empty());
    CHECK(commands[0].subject == "a.b");
    CHECK_FALSE(commands[1].dropped);
    CHECK(commands[1].headers == "NATS/1.0\r\nA: 1\r\n\r\n");
    CHECK(commands[1].payload == std::string(50, 'y'));
    CHECK(commands[1].tied_to == 7u);
    CHECK((commands[2].verb == Verb::kAck && commands[2].id == 7));
  }
}

TEST_CASE("publish: a dropped PUB body must still end with CR LF", "[unit]") {
  CommandParser parser;
  parser.set_version(kVersion3);
  parser.set_max_publish_body(1);
  std::string_view input = "PUB 1 a 0 3\r\nabcXY";
  Command command;
  CHECK(parser.parse(input, command) == CommandParser::Result::kError);
  CHECK(parser.code() == ErrorCode::kBadBodyEnd);
}

TEST_CASE("publish: which subjects a handler can publish to", "[unit]") {
  for (const char* good : {"a", "orders.created", "a.b.c-d_e", "$KV.bucket.key", "x.\xc3\xa9"}) {
    INFO(good);
    CHECK(is_publish_subject(good));
  }
  for (const char* bad : {"", ".", "a.", ".a", "a..b", "*", "a.*", "a.>", ">", "a b", "a\tb", "a\rb", "a\x7f"}) {
    INFO(bad);
    CHECK_FALSE(is_publish_subject(bad));
  }
  CHECK(is_publish_subject(std::string(kMaxSubject, 'a')));
  CHECK_FALSE(is_publish_subject(std::string(kMaxSubject + 1, 'a')));
  CHECK(is_publish_subject("a*b"));  // a wildcard only as a whole token, as nats-server reads it
}

TEST_CASE("publish: which header blocks a PUB may carry", "[unit]") {
  CHECK(is_header_block(""));
  CHECK(is_header_block("NATS/1.0\r\n\r\n"));
  CHECK(is_header_block("NATS/1.0\r\nA: 1\r\nB: 2\r\n\r\n"));
  CHECK(is_header_block("NATS/1.0 503\r\n\r\n"));
  CHECK_FALSE(is_header_block("NATS/1.0\r\n"));
  CHECK_FALSE(is_header_block("NATS/1.0\r\nA: 1\r\n"));
  CHECK_FALSE(is_header_block("NATS/1.1\r\n\r\n"));
  CHECK_FALSE(is_header_block("NATS/1.0x\r\n\r\n"));
  CHECK_FALSE(is_header_block("A: 1\r\n\r\n"));
}

TEST_CASE("publish: PUBERR's reason is one line and fits 1024 bytes, cut between UTF-8 characters", "[unit]") {
  std::string reason;
  for (int i = 0; i < 600; ++i) reason += "\xc3\xa9";  // 1200 bytes of "é"
  std::string out;
  append_puberr(out, 1, to_string(PublishError::kRefused), reason);
  CHECK(out.size() <= kMaxCommandLine);
  CHECK(out.substr(out.size() - 2) == "\r\n");
  const std::string_view body(out.data(), out.size() - 2);
  CHECK(body.find('\n') == std::string_view::npos);
  CHECK((static_cast<unsigned char>(body.back()) == 0xa9));  // ends with a whole character

  DeliveryParser parser;
  std::string stream = "READY 3 h 1 #\r\n" + out;
  std::string_view input(stream);
  Frame frame;
  REQUIRE(parser.parse(input, frame) == DeliveryParser::Result::kFrame);
  REQUIRE(parser.parse(input, frame) == DeliveryParser::Result::kFrame);
  CHECK(frame.kind == Frame::Kind::kPubErr);
  CHECK(frame.publish.code == "refused");
}

TEST_CASE("publish: every PUBERR code has its name", "[unit]") {
  const PublishError all[] = {PublishError::kNotAllowed, PublishError::kBadSubject,  PublishError::kBadHeaders,
                              PublishError::kTooLarge,   PublishError::kNotInFlight, PublishError::kBusyId,
                              PublishError::kNoStream,   PublishError::kRefused,     PublishError::kTimeout,
                              PublishError::kServerDown};
  std::set<std::string> names;
  for (const auto code : all) names.insert(to_string(code));
  CHECK(names.size() == std::size(all));
  CHECK(names.count("?") == 0);
}
