#include <catch2/catch.hpp>

#include <random>

#include "command_parser.hpp"
#include "delivery_parser.hpp"
#include "encoder.hpp"

using namespace jetfan::proto;

namespace {
std::vector<Frame> parse_all(const std::string& stream, std::vector<std::size_t> cuts, std::string* error = nullptr) {
  DeliveryParser parser;
  std::vector<Frame> out;
  cuts.push_back(stream.size());
  std::size_t from = 0;
  for (std::size_t cut : cuts) {
    std::string chunk = stream.substr(from, cut - from);
    from = cut;
    std::string_view input(chunk);
    Frame frame;
    for (;;) {
      const auto result = parser.parse(input, frame);
      if (result == DeliveryParser::Result::kFrame) {
        out.push_back(frame);
        continue;
      }
      if (result == DeliveryParser::Result::kError) {
        if (error) *error = parser.error();
        return out;
      }
      REQUIRE(input.empty());
      break;
    }
  }
  return out;
}

const std::string kHeaders = "NATS/1.0\r\nNats-Msg-Id: 7\r\n\r\n";
const std::string kBinary = std::string("a\r\nMSG 1 x 1 1 0 0\r\n\0\xff", 22);

std::string all_frames() {
  std::string s;
  append_ready(s, 1, "builder", 64, {"mesh-build-machine.built", "#"});
  append_msg(s, 1, "mesh-build-machine.built", 42, 1, "", "{\"machine\":3}");
  append_msg(s, 2, "a.b", 43, 2, kHeaders, kBinary);
  append_msg(s, 3, "empty", 44, 1, "", "");
  append_ping(s);
  append_pong(s);
  append_err(s, "unknown handler \"x\"\r\nPING");
  return s;
}

void check_all(const std::vector<Frame>& f) {
  REQUIRE(f.size() == 7);
  CHECK(f[0].kind == Frame::Kind::kReady);
  CHECK(f[0].ready.version == 1);
  CHECK(f[0].ready.handler == "builder");
  CHECK(f[0].ready.max_unconfirmed == 64);
  CHECK(f[0].ready.patterns == std::vector<std::string>{"mesh-build-machine.built", "#"});
  CHECK(f[1].kind == Frame::Kind::kMsg);
  CHECK(f[1].delivery.id == 1);
  CHECK(f[1].delivery.key == "mesh-build-machine.built");
  CHECK(f[1].delivery.stream_seq == 42);
  CHECK(f[1].delivery.deliveries == 1);
  CHECK(f[1].delivery.headers.empty());
  CHECK(f[1].delivery.payload == "{\"machine\":3}");
  CHECK(f[2].delivery.headers == kHeaders);
  CHECK(f[2].delivery.payload == kBinary);
  CHECK(f[2].delivery.deliveries == 2);
  CHECK(f[3].delivery.payload.empty());
  CHECK(f[4].kind == Frame::Kind::kPing);
  CHECK(f[5].kind == Frame::Kind::kPong);
  CHECK(f[6].kind == Frame::Kind::kErr);
  CHECK(f[6].error == "unknown handler \"x\"  PING");  // a reason can never break the framing
}
}  // namespace

TEST_CASE("ready_line_length is the length of the line append_ready writes", "[unit]") {
  for (const auto& patterns : {std::vector<std::string>{"#"}, std::vector<std::string>{"a.*", "b.>", "c"}}) {
    for (const std::uint32_t limit : {1u, 64u, 65536u}) {
      std::string line;
      append_ready(line, 1, "builder", limit, patterns);
      CHECK(ready_line_length("builder", limit, patterns) == line.size());
    }
  }
}

TEST_CASE("frames parse whole", "[unit]") { check_all(parse_all(all_frames(), {})); }

TEST_CASE("frames parse when split at every byte boundary", "[unit]") {
  const auto stream = all_frames();
  for (std::size_t cut = 0; cut <= stream.size(); ++cut) {
    INFO("cut at " << cut);
    check_all(parse_all(stream, {cut}));
  }
}

TEST_CASE("frames parse when split at every pair of byte boundaries", "[unit]") {
  const auto stream = all_frames();
  for (std::size_t a = 0; a <= stream.size(); a += 3) {
    for (std::size_t b = a; b <= stream.size(); b += 5) check_all(parse_all(stream, {a, b}));
  }
}

TEST_CASE("bad frames are errors that say what was wrong", "[unit]") {
  const std::pair<std::string, const char*> cases[] = {
      {"MSG 1 k 1 1 0\r\n", "MSG needs 6 arguments"},        {"MSG 1 k 1 1 5 3\r\nabc\r\n", "header bytes exceed"},
      {"MSG 1 k x 1 0 3\r\nabc\r\n", "malformed number"},    {"MSG 1 k 1 1 0 3\r\nabcd\r\n", "not followed by \\r\\n"},
      {"MSG 1 k 1 1 0 99999999999\r\n", "body larger than"}, {"READY 1 b\r\n", "READY needs"},
      {"HELLO x 1\r\n", "unknown frame \"HELLO\""},          {std::string(17000, 'x'), "longer than 16384"},
  };
  for (const auto& [input, expected] : cases) {
    INFO(input.substr(0, 40));
    std::string error;
    CHECK(parse_all(input, {}, &error).empty());
    CHECK_THAT(error, Catch::Contains(expected));
  }
}

namespace {
// Garbage made of the protocol's own words, so that some of it parses and some of it does not.
std::string random_garbage(std::mt19937& random) {
  static const char* const kWords[] = {"MSG ",  "READY ", "PING", "PONG", "ERR ", "HELLO ", "ACK ", "NAK ",
                                       "TERM ", "WIP ",   "1 ",   "0 ",   "7",    "k ",     "a.b ", "#",
                                       "*",     ">",      " ",    "\r\n", "\r\n", "\r",     "\n",   "x"};
  std::string garbage;
  const int words = std::uniform_int_distribution<int>(1, 60)(random);
  for (int i = 0; i < words; ++i)
    garbage += kWords[std::uniform_int_distribution<std::size_t>(0, std::size(kWords) - 1)(random)];
  return garbage;
}

// Feeds `garbage` to a new Parser in chunks of random length, then a well-formed "PING\r\n" (a frame
// for both parsers). Every result is checked: a frame or kNeedMore only before the first error, with
// the chunk then used up; after an error, kError on every call, the first error's reason and code
// kept. Counts the frames and the errors it saw.
template <typename Parser, typename Out>
void feed(const std::string& garbage, std::mt19937& random, typename Parser::Result frame, int& frames, int& errors) {
  Parser parser;
  Out out;
  bool failed = false;
  std::string error;
  ErrorCode code = ErrorCode::kNone;
  const std::string input = garbage + "PING\r\n";
  for (std::size_t from = 0; from < input.size();) {
    const std::size_t length = std::uniform_int_distribution<std::size_t>(1, 16)(random);
    std::string_view chunk(input.data() + from, std::min(length, input.size() - from));
    from += chunk.size();
    for (;;) {
      const auto result = parser.parse(chunk, out);
      if (result == Parser::Result::kError) {
        if (!failed) {
          failed = true, ++errors, error = parser.error(), code = parser.code();
          CHECK_FALSE(error.empty());
          CHECK(code != ErrorCode::kNone);
        }
        CHECK(parser.error() == error);
        CHECK(parser.code() == code);
        break;
      }
      CHECK_FALSE(failed);  // no frame, and no asking for more, past an error
      if (result == frame) {
        ++frames;
        continue;
      }
      CHECK(chunk.empty());  // kNeedMore: it took everything it was given
      break;
    }
  }
}
}  // namespace

TEST_CASE("random garbage never crashes either parser and never yields a frame past an error", "[unit]") {
  std::mt19937 random(7);
  int frames[2] = {0, 0};
  int errors[2] = {0, 0};
  for (int round = 0; round < 2000; ++round) {
    const std::string garbage = random_garbage(random);
    INFO("round " << round << ": " << garbage);
    feed<DeliveryParser, Frame>(garbage, random, DeliveryParser::Result::kFrame, frames[0], errors[0]);
    feed<CommandParser, Command>(garbage, random, CommandParser::Result::kCommand, frames[1], errors[1]);
  }
  // The garbage reached both sides of each parser: frames parsed, and errors after which none was.
  for (int side : {0, 1}) {
    INFO((side == 0 ? "DeliveryParser" : "CommandParser")
         << ": " << frames[side] << " frames, " << errors[side] << " errors");
    CHECK(frames[side] > 0);
    CHECK(errors[side] > 0);
  }
}

namespace {
// A delivery with every field version 2 has.
Delivery version2_delivery() {
  Delivery d;
  d.id = 5;
  d.key = "built";
  d.stream_seq = 42;
  d.deliveries = 1;
  d.headers = kHeaders;
  d.payload = kBinary;
  d.published_ns = 1'700'000'000'123'456'789;
  d.subject = "mesh.built";
  d.server_deliveries = 3;
  return d;
}
}  // namespace

TEST_CASE("delivery parser: after READY 2, MSG carries the publish time, the subject and the server's count",
          "[unit]") {
  std::string s;
  append_ready(s, 2, "builder", 8, {"#"});
  Delivery d = version2_delivery();
  append_msg(s, 2, d);
  CHECK(s.substr(s.find("MSG")).starts_with("MSG 5 built 42 1 28 50 1700000000123456789 mesh.built 3\r\n"));
  for (std::size_t cut = 0; cut <= s.size(); ++cut) {
    const auto frames = parse_all(s, {cut});
    REQUIRE(frames.size() == 2);
    CHECK(frames[0].ready.version == 2);
    const auto& got = frames[1].delivery;
    CHECK(got.key == "built");
    CHECK(got.headers == kHeaders);
    CHECK(got.payload == kBinary);
    CHECK(got.published_ns == d.published_ns);
    CHECK(got.subject == "mesh.built");
    CHECK(got.server_deliveries == 3);
    CHECK(got.deliveries == 1);
  }
}

TEST_CASE("delivery parser: each version's MSG has its own argument count", "[unit]") {
  std::string error;
  // A version 1 stream: the version 2 layout has too many arguments.
  CHECK(parse_all("MSG 1 k 1 1 0 0 5 k\r\n\r\n", {}, &error).empty());
  CHECK(error.find("6 arguments") != std::string::npos);
  CHECK(parse_all("READY 1 h 1 #\r\nMSG 1 k 1 1 0 0 5 k\r\n\r\n", {}, &error).size() == 1);
  // A version 2 stream: the version 1 layout misses three; a bad publish time or server count is a
  // bad number.
  CHECK(parse_all("READY 2 h 1 #\r\nMSG 1 k 1 1 0 0\r\n\r\n", {}, &error).size() == 1);
  CHECK(error.find("9 arguments") != std::string::npos);
  CHECK(parse_all("READY 2 h 1 #\r\nMSG 1 k 1 1 0 0 -5 k 1\r\n\r\n", {}, &error).size() == 1);
  CHECK(error == "MSG: malformed number");
  CHECK(parse_all("READY 2 h 1 #\r\nMSG 1 k 1 1 0 0 5 k x\r\n\r\n", {}, &error).size() == 1);
  CHECK(error == "MSG: malformed number");
  const auto frames = parse_all("READY 2 h 1 #\r\nMSG 1 k 1 1 0 0 0 ev.k 1\r\n\r\n", {});
  REQUIRE(frames.size() == 2);
  CHECK(frames[1].delivery.published_ns == 0);  // unknown
  CHECK(frames[1].delivery.subject == "ev.k");
  CHECK(frames[1].delivery.server_deliveries == 1);
}

TEST_CASE("encoder: a version 1 MSG is the same bytes whichever call writes it", "[unit]") {
  Delivery d;
  d.id = 7;
  d.key = "a.b";
  d.stream_seq = 42;
  d.deliveries = 1;
  d.payload = "{}";
  d.published_ns = 99;
  d.subject = "ev.a.b";
  std::string one;
  std::string two;
  append_msg(one, 1, d);
  append_msg(two, 7, "a.b", 42, 1, "", "{}");
  CHECK(one == two);
  CHECK(one == "MSG 7 a.b 42 1 0 2\r\n{}\r\n");
}

namespace {
const std::string kTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
}  // namespace

TEST_CASE("delivery parser: after READY 3, MSG ends with the delivery's traceparent, or - for none", "[unit]") {
  for (const std::string& traceparent : {kTraceparent, std::string()}) {
    INFO("traceparent \"" << traceparent << "\"");
    std::string s;
    append_ready(s, 3, "builder", 8, {"#"});
    Delivery d = version2_delivery();
    d.traceparent = traceparent;
    append_msg(s, 3, d);
    const std::string word = traceparent.empty() ? "-" : traceparent;
    CHECK(s.substr(s.find("MSG"))
              .starts_with("MSG 5 built 42 1 28 50 1700000000123456789 mesh.built 3 " + word + "\r\n"));
    for (std::size_t cut = 0; cut <= s.size(); ++cut) {
      const auto frames = parse_all(s, {cut});
      REQUIRE(frames.size() == 2);
      CHECK(frames[0].ready.version == 3);
      const auto& got = frames[1].delivery;
      CHECK(got.key == "built");
      CHECK(got.headers == kHeaders);
      CHECK(got.payload == kBinary);
      CHECK(got.published_ns == d.published_ns);
      CHECK(got.subject == "mesh.built");
      CHECK(got.server_deliveries == 3);
      CHECK(got.traceparent == traceparent);
    }
  }
}

TEST_CASE("delivery parser: version 3's MSG has 10 arguments, the last - or a W3C traceparent", "[unit]") {
  std::string error;
  // A version 2 MSG misses the traceparent; one word more is too many.
  CHECK(parse_all("READY 3 h 1 #\r\nMSG 1 k 1 1 0 0 5 k 1\r\n\r\n", {}, &error).size() == 1);
  CHECK(error.find("10 arguments in protocol version 3") != std::string::npos);
  CHECK(parse_all("READY 3 h 1 #\r\nMSG 1 k 1 1 0 0 5 k 1 - -\r\n\r\n", {}, &error).size() == 1);
  CHECK(error.find("10 arguments") != std::string::npos);
  // Version 2 is unchanged: a traceparent there is one argument too many.
  CHECK(parse_all("READY 2 h 1 #\r\nMSG 1 k 1 1 0 0 5 k 1 -\r\n\r\n", {}, &error).size() == 1);
  CHECK(error.find("9 arguments") != std::string::npos);
  const std::string bad[] = {
      "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01",   // upper case
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",    // 54 characters
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-011",  // 56 characters
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",  // a field more, past 55
      "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   // no dash
      "004-bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   // a dash out of place
      "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",   // not hex
      "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   // version ff
      "00-00000000000000000000000000000000-00f067aa0ba902b7-01",   // all-zero trace id
      "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",   // all-zero parent id
      "--",
      "0",
      "none",
  };
  for (const auto& word : bad) {
    INFO(word);
    CHECK_FALSE(is_traceparent(word));
    DeliveryParser parser;
    std::string stream = "READY 3 h 1 #\r\nMSG 1 k 1 1 0 0 5 k 1 " + word + "\r\n\r\n";
    std::string_view input(stream);
    Frame frame;
    CHECK(parser.parse(input, frame) == DeliveryParser::Result::kFrame);
    CHECK(parser.parse(input, frame) == DeliveryParser::Result::kError);
    CHECK(parser.code() == ErrorCode::kBadTraceparent);
    CHECK_THAT(parser.error(), Catch::Contains("traceparent \"" + word.substr(0, 55)));
  }
  // The W3C shape, whatever the version but ff, and any flags.
  for (const std::string& good : {kTraceparent, std::string("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"),
                                  std::string("00-00000000000000000000000000000001-0000000000000001-ff")}) {
    INFO(good);
    CHECK(is_traceparent(good));
    const auto frames = parse_all("READY 3 h 1 #\r\nMSG 1 k 1 1 0 0 5 k 1 " + good + "\r\n\r\n", {});
    REQUIRE(frames.size() == 2);
    CHECK(frames[1].delivery.traceparent == good);
  }
  // A bad number is named before a bad traceparent.
  CHECK(parse_all("READY 3 h 1 #\r\nMSG 1 k 1 1 0 0 5 k x nope\r\n\r\n", {}, &error).size() == 1);
  CHECK(error == "MSG: malformed number");
}

TEST_CASE("encoder: version 3's MSG line writes - for no traceparent, and for one that is not", "[unit]") {
  std::string out;
  append_msg3_line(out, 7, "a.b", 42, 1, 0, 2, 99, "ev.a.b", 1, kTraceparent);
  CHECK(out == "MSG 7 a.b 42 1 0 2 99 ev.a.b 1 " + kTraceparent + "\r\n");
  for (const std::string_view not_one : {std::string_view(), std::string_view("x y"), std::string_view("-\r\nPING")}) {
    out.clear();
    append_msg3_line(out, 7, "a.b", 42, 1, 0, 2, 99, "ev.a.b", 1, not_one);
    CHECK(out == "MSG 7 a.b 42 1 0 2 99 ev.a.b 1 -\r\n");
  }
  // Versions 1 and 2 leave it out.
  Delivery d;
  d.id = 7;
  d.key = "a.b";
  d.stream_seq = 42;
  d.deliveries = 1;
  d.payload = "{}";
  d.published_ns = 99;
  d.subject = "ev.a.b";
  d.server_deliveries = 1;
  d.traceparent = kTraceparent;
  out.clear();
  append_msg(out, 2, d);
  CHECK(out == "MSG 7 a.b 42 1 0 2 99 ev.a.b 1\r\n{}\r\n");
  out.clear();
  append_msg(out, 1, d);
  CHECK(out == "MSG 7 a.b 42 1 0 2\r\n{}\r\n");
  out.clear();
  append_msg(out, 3, d);
  CHECK(out == "MSG 7 a.b 42 1 0 2 99 ev.a.b 1 " + kTraceparent + "\r\n{}\r\n");
}

TEST_CASE("a version 3 MSG line of the longest subjects fits the control line limit", "[unit]") {
  // nats-server's default max_control_line is 4096 bytes, "PUB <subject> <size>\r\n" included:
  // every subject it takes is shorter, and so is every key.
  const std::string subject(4096, 's');
  std::string out;
  append_msg3_line(out, UINT64_MAX, subject, UINT64_MAX, UINT64_MAX, SIZE_MAX, SIZE_MAX, UINT64_MAX, subject,
                   UINT64_MAX, kTraceparent);
  CHECK(out.size() == 2 * 4096 + 210);
  CHECK(out.size() <= kMaxDeliveryLine);
}
