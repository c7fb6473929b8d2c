#include <catch2/catch.hpp>

#include "command_parser.hpp"
#include "encoder.hpp"

using namespace jetfan::proto;

namespace {
// Feeds `stream` cut at the given points and returns the commands parsed, or the error.
std::vector<Command> parse_all(const std::string& stream, std::vector<std::size_t> cuts, std::string* error = nullptr) {
  CommandParser parser;
  std::vector<Command> out;
  cuts.push_back(stream.size());
  std::size_t from = 0;
  for (std::size_t cut : cuts) {
    std::string chunk = stream.substr(from, cut - from);  // a fresh buffer, as a socket read gives
    from = cut;
    std::string_view input(chunk);
    Command command;
    for (;;) {
      const auto result = parser.parse(input, command);
      if (result == CommandParser::Result::kCommand) {
        out.push_back(command);
        continue;
      }
      if (result == CommandParser::Result::kError) {
        if (error) *error = parser.error();
        return out;
      }
      REQUIRE(input.empty());
      break;
    }
  }
  return out;
}

std::string all_commands() {
  std::string s;
  append_hello(s, "builder");
  append_ack(s, 1);
  append_nak(s, 2);
  append_nak(s, 3, 1500);
  append_term(s, 4, "bad json: at byte 7");
  append_wip(s, 5);
  append_ping(s);
  append_pong(s);
  s += "ack 18446744073709551615\n";  // lower case, bare \n, the largest id
  return s;
}

void check_all(const std::vector<Command>& c) {
  REQUIRE(c.size() == 9);
  CHECK(c[0].verb == Verb::kHello);
  CHECK(c[0].handler == "builder");
  CHECK(c[0].version == kLatestVersion);  // a handler names the highest version it speaks
  CHECK((c[1].verb == Verb::kAck && c[1].id == 1));
  CHECK((c[2].verb == Verb::kNak && c[2].id == 2 && !c[2].delay_ms));
  CHECK((c[3].verb == Verb::kNak && c[3].id == 3 && c[3].delay_ms == 1500u));
  CHECK((c[4].verb == Verb::kTerm && c[4].id == 4 && c[4].reason == "bad json: at byte 7"));
  CHECK((c[5].verb == Verb::kWip && c[5].id == 5));
  CHECK(c[6].verb == Verb::kPing);
  CHECK(c[7].verb == Verb::kPong);
  CHECK((c[8].verb == Verb::kAck && c[8].id == 18446744073709551615ULL));
}
}  // namespace

TEST_CASE("commands parse whole", "[unit]") { check_all(parse_all(all_commands(), {})); }

TEST_CASE("commands parse when split at every byte boundary", "[unit]") {
  const auto stream = all_commands();
  for (std::size_t cut = 0; cut <= stream.size(); ++cut) {
    INFO("cut at " << cut);
    check_all(parse_all(stream, {cut}));
  }
}

TEST_CASE("commands parse when fed one byte at a time", "[unit]") {
  const auto stream = all_commands();
  std::vector<std::size_t> cuts;
  for (std::size_t i = 1; i < stream.size(); ++i) cuts.push_back(i);
  check_all(parse_all(stream, cuts));
}

TEST_CASE("blank lines are skipped", "[unit]") {
  const auto c = parse_all("\r\n\n  \nPING\n", {});
  REQUIRE(c.size() == 1);
  CHECK(c[0].verb == Verb::kPing);
}

TEST_CASE("garbage is an error that says what was wrong", "[unit]") {
  const std::pair<const char*, const char*> cases[] = {
      {"FOO 1\r\n", "unknown command \"FOO\""},
      {"ACK\r\n", "ACK needs a delivery id"},
      {"ACK x\r\n", "\"x\" is not a delivery id"},
      {"ACK -1\r\n", "is not a delivery id"},
      {"ACK 1 2\r\n", "ACK takes 1 argument(s)"},
      {"ACK 184467440737095516150\r\n", "is not a delivery id"},
      {"NAK 1 soon\r\n", "is not a delay"},
      {"NAK 1 2 3\r\n", "NAK takes 1 argument(s)"},
      {"WIP\r\n", "WIP needs a delivery id"},
      {"HELLO\r\n", "HELLO needs a handler name"},
      {"HELLO a b\r\n", "is not a protocol version"},
      {"PING now\r\n", "PING takes 0 argument(s)"},
      {"\x01\x02\xff\r\n", "unknown command \"???\""},
  };
  for (const auto& [input, expected] : cases) {
    INFO(input);
    std::string error;
    CHECK(parse_all(input, {}, &error).empty());
    CHECK_THAT(error, Catch::Contains(expected));
  }
}

TEST_CASE("the control line limit is enforced, with or without a line end", "[unit]") {
  std::string error;
  const std::string longest = "TERM 1 " + std::string(kMaxCommandLine - 9, 'x') + "\r\n";
  REQUIRE(longest.size() == kMaxCommandLine);
  CHECK(parse_all(longest, {}, &error).size() == 1);
  CHECK(error.empty());
  const std::string over = "TERM 1 " + std::string(kMaxCommandLine - 8, 'x') + "\r\n";
  CHECK(parse_all(over, {}, &error).empty());
  CHECK_THAT(error, Catch::Contains("longer than 1024"));
  error.clear();
  CHECK(parse_all(std::string(5000, 'A'), {100, 2000}, &error).empty());
  CHECK_THAT(error, Catch::Contains("longer than 1024"));
}

TEST_CASE("after an error the parser stays in error", "[unit]") {
  CommandParser parser;
  std::string bad = "NOPE\r\nPING\r\n";
  std::string_view input(bad);
  Command command;
  CHECK(parser.parse(input, command) == CommandParser::Result::kError);
  CHECK(parser.parse(input, command) == CommandParser::Result::kError);
}
