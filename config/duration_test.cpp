#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "duration.hpp"

using jetfan::Duration;
using jetfan::duration_refusal;
using jetfan::parse_duration;

namespace {

// Ten years, the longest duration accepted.
constexpr Duration::rep kMaxMs = 10LL * 365 * 24 * 3'600'000;

// The micro sign (U+00B5), which Go prints, and the Greek mu (U+03BC) that looks the same.
const std::string kMicroSign = "\xC2\xB5";
const std::string kGreekMu = "\xCE\xBC";

}  // namespace

TEST_CASE("durations accept a whole number and a unit, as before", "[unit]") {
  CHECK(parse_duration("250ms") == Duration(250));
  CHECK(parse_duration("30s") == Duration(30'000));
  CHECK(parse_duration("5m") == Duration(300'000));
  CHECK(parse_duration("1h") == Duration(3'600'000));
  CHECK(parse_duration("2h") == Duration(7'200'000));
  CHECK(parse_duration("0s") == Duration(0));
  CHECK(parse_duration("00030s") == Duration(30'000));  // leading zeros, as Go
}

TEST_CASE("durations accept Go's syntax as NATS writes it", "[unit]") {
  CHECK(parse_duration("300ms") == Duration(300));
  CHECK(parse_duration("1.5s") == Duration(1'500));
  CHECK(parse_duration("30.0s") == Duration(30'000));  // jetfan status: "AckWait 30.0s"
  CHECK(parse_duration("1m21s") == Duration(81'000));  // jetfan status: "up 1m21s"
  CHECK(parse_duration("1m30s") == Duration(90'000));
  CHECK(parse_duration("2h45m") == Duration(9'900'000));
  CHECK(parse_duration("1h0m0s") == Duration(3'600'000));  // Go's String() of an hour
  CHECK(parse_duration("2h45m30.25s") == Duration(9'930'250));
  CHECK(parse_duration("1000us") == Duration(1));
  CHECK(parse_duration("1000" + kMicroSign + "s") == Duration(1));
  CHECK(parse_duration("1000" + kGreekMu + "s") == Duration(1));
  CHECK(parse_duration("1000000ns") == Duration(1));
  CHECK(parse_duration("1.5h") == Duration(5'400'000));
  CHECK(parse_duration("0.5m") == Duration(30'000));
  CHECK(parse_duration("0.25ms") == Duration(1));  // rounded up, below
  CHECK(parse_duration("0.000s") == Duration(0));
  CHECK(parse_duration("0h0m0s") == Duration(0));
}

TEST_CASE("durations take Go's corner cases of the number and of the order of the parts", "[unit]") {
  CHECK(parse_duration(".5s") == Duration(500));
  CHECK(parse_duration("1.s") == Duration(1'000));
  CHECK(parse_duration("1s1s") == Duration(2'000));                      // a unit may repeat...
  CHECK(parse_duration("30s1m") == Duration(90'000));                    // ...and the parts come in any order
  CHECK(parse_duration("1.500000000000000000000s") == Duration(1'500));  // zeros past the nanosecond
}

TEST_CASE("durations that are not whole milliseconds are rounded up, exactly, never down to 0", "[unit]") {
  CHECK(parse_duration("1ns") == Duration(1));
  CHECK(parse_duration("100ns") == Duration(1));
  CHECK(parse_duration("500us") == Duration(1));
  CHECK(parse_duration("250" + kMicroSign + "s") == Duration(1));
  CHECK(parse_duration("250" + kGreekMu + "s") == Duration(1));
  CHECK(parse_duration("250us") == Duration(1));
  CHECK(parse_duration("999999ns") == Duration(1));
  CHECK(parse_duration("1000001ns") == Duration(2));
  CHECK(parse_duration("1500us") == Duration(2));
  CHECK(parse_duration("1.0001s") == Duration(1'001));
  CHECK(parse_duration("1.000000001s") == Duration(1'001));  // 1ns over a whole second
  CHECK(parse_duration("0.000000001s") == Duration(1));
  CHECK(parse_duration("0.000000000005h") == Duration(1));  // 18ns: the 12th decimal of an hour
  // The rounding is of the total, not of each part: 1.5ms, not 1ms + 1ms.
  CHECK(parse_duration("1ms500us") == Duration(2));
  CHECK(parse_duration("500us500us") == Duration(1));
  CHECK(parse_duration("999us1000ns") == Duration(1));
}

TEST_CASE("durations up to ten years are accepted, longer ones and overflow refused", "[unit]") {
  CHECK(parse_duration("87600h") == Duration(kMaxMs));
  CHECK(parse_duration("315360000000ms") == Duration(kMaxMs));
  CHECK(parse_duration("87599h59m59.999s") == Duration(kMaxMs - 1));
  CHECK(parse_duration("87599h59m59.999000001s") == Duration(kMaxMs));  // rounded up to the limit
  CHECK(parse_duration("315360000000000000ns") == Duration(kMaxMs));
  for (const char* bad :
       {"87600h1ns", "87600.00000000001h", "315360000001ms", "315360000000000001ns", "87600h87600h", "43800h43800h1ms",
        "1000000000h", "99999999999999999999ms", "18446744073709551615ns", "18446744073709551616ns",
        "184467440737095516160000s", "99999999999999999999999999999999999999.5h"}) {
    INFO(bad);
    CHECK_FALSE(parse_duration(bad));
    CHECK(duration_refusal(bad) == "it is longer than 10 years (87600h)");
  }
}

TEST_CASE("durations refuse signs, bare numbers, spaces and unknown or upper-case units", "[unit]") {
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"", "it is empty"},
      {"-1s", "a duration takes no sign, and cannot be negative"},
      {"-0s", "a duration takes no sign, and cannot be negative"},
      {"+1s", "a duration takes no sign, and cannot be negative"},
      {"30", "a number needs a unit (ns, us, ms, s, m or h), even 0: write 0s"},
      {"0", "a number needs a unit (ns, us, ms, s, m or h), even 0: write 0s"},
      {"1.5", "a number needs a unit (ns, us, ms, s, m or h), even 0: write 0s"},
      {"1m30", "a number needs a unit (ns, us, ms, s, m or h), even 0: write 0s"},
      {"1.2.3s", "a number needs a unit (ns, us, ms, s, m or h), even 0: write 0s"},
      {"s", "each part is a number and a unit, e.g. 1m30s or 1.5s"},
      {"ms", "each part is a number and a unit, e.g. 1m30s or 1.5s"},
      {".s", "each part is a number and a unit, e.g. 1m30s or 1.5s"},
      {"1s.", "each part is a number and a unit, e.g. 1m30s or 1.5s"},
      {kMicroSign + "s", "each part is a number and a unit, e.g. 1m30s or 1.5s"},
      {" 30s", "write it without spaces, e.g. 1m30s"},
      {"30s ", "write it without spaces, e.g. 1m30s"},
      {"30 s", "write it without spaces, e.g. 1m30s"},
      {"1m 30s", "write it without spaces, e.g. 1m30s"},
      {"30s\n", "write it without spaces, e.g. 1m30s"},
      {"3 seconds", "write it without spaces, e.g. 1m30s"},
      {"30S", "write the unit in lower case: s, not S"},
      {"5M", "write the unit in lower case: m, not M"},
      {"1H", "write the unit in lower case: h, not H"},
      {"250MS", "write the unit in lower case: ms, not MS"},
      {"250Ms", "write the unit in lower case: ms, not Ms"},
      {"100NS", "write the unit in lower case: ns, not NS"},
      {"500US", "write the unit in lower case: us, not US"},
      {"1m30S", "write the unit in lower case: s, not S"},
      {"30x", "\"x\" is not a unit; the units are ns, us (or \xC2\xB5s), ms, s, m and h"},
      {"1d", "\"d\" is not a unit; the units are ns, us (or \xC2\xB5s), ms, s, m and h"},
      {"1w", "\"w\" is not a unit; the units are ns, us (or \xC2\xB5s), ms, s, m and h"},
      {"30sec", "\"sec\" is not a unit; the units are ns, us (or \xC2\xB5s), ms, s, m and h"},
      {"5min", "\"min\" is not a unit; the units are ns, us (or \xC2\xB5s), ms, s, m and h"},
      {"30SEC", "\"SEC\" is not a unit; the units are ns, us (or \xC2\xB5s), ms, s, m and h"},
      {"1m-30s", "\"m-\" is not a unit; the units are ns, us (or \xC2\xB5s), ms, s, m and h"},
      {"1e3s", "\"e\" is not a unit; the units are ns, us (or \xC2\xB5s), ms, s, m and h"},
      {"1_000ms", "\"_\" is not a unit; the units are ns, us (or \xC2\xB5s), ms, s, m and h"},
      {"0x10s", "\"x\" is not a unit; the units are ns, us (or \xC2\xB5s), ms, s, m and h"},
      {"1,5s", "\",\" is not a unit; the units are ns, us (or \xC2\xB5s), ms, s, m and h"},
      {"5" + kMicroSign, "\"" + kMicroSign + "\" is not a unit; the units are ns, us (or \xC2\xB5s), ms, s, m and h"},
      {"0.5ns", "it is not a whole number of nanoseconds"},
      {"1.0000000001s", "it is not a whole number of nanoseconds"},
      {"0.0001us", "it is not a whole number of nanoseconds"},
      {"0.0000000000001h", "it is not a whole number of nanoseconds"},  // 0.36ns
      {"0.5ns0.5ns", "it is not a whole number of nanoseconds"},        // each part on its own
      // A fault of the grammar is named before one of the value found further left: fix it first.
      {"87600h1d", "\"d\" is not a unit; the units are ns, us (or \xC2\xB5s), ms, s, m and h"},
      {"0.5ns1d", "\"d\" is not a unit; the units are ns, us (or \xC2\xB5s), ms, s, m and h"},
      {"0.5ns30", "a number needs a unit (ns, us, ms, s, m or h), even 0: write 0s"},
      {"87600h1ns0.5ns", "it is longer than 10 years (87600h)"},
  };
  for (const auto& [text, why] : refused) {
    INFO(text);
    CHECK_FALSE(parse_duration(text));
    CHECK(duration_refusal(text) == why);
  }
}

TEST_CASE("duration_refusal has nothing to say about what parse_duration accepts", "[unit]") {
  for (const char* good : {"250ms", "30s", "1m30s", "1.5s", "500us", "0s", "87600h"}) {
    INFO(good);
    REQUIRE(parse_duration(good));
    CHECK_FALSE(duration_refusal(good));
  }
}

// docs/jetfan.schema.json's pattern is what editors check durations with: it must accept every text
// the grammar accepts (the values refused for their size, over 10 years or finer than a nanosecond,
// are beyond a pattern) and refuse every text the grammar refuses.
TEST_CASE("the config schema's duration pattern is the grammar parse_duration accepts", "[schema]") {
  std::ifstream in(JETFAN_CONFIG_SCHEMA);
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  const auto schema = nlohmann::json::parse(text.str());
  const std::regex pattern(schema.at("$defs").at("duration").at("pattern").get<std::string>());
  const std::vector<std::string> grammatical = {"250ms",
                                                "30s",
                                                "5m",
                                                "1h",
                                                "0s",
                                                "1.5s",
                                                "1m30s",
                                                "2h45m",
                                                "1h0m0s",
                                                "100ns",
                                                "500us",
                                                "250" + kMicroSign + "s",
                                                "250" + kGreekMu + "s",
                                                ".5s",
                                                "1.s",
                                                "30s1m",
                                                "00030s",
                                                "30.0s",
                                                "87600h1ns",
                                                "0.5ns"};  // the last two: grammatical, refused for their values
  for (const auto& good : grammatical) {
    INFO(good);
    CHECK(std::regex_search(good, pattern));
  }
  const std::vector<std::string> ungrammatical = {"",
                                                  "-1s",
                                                  "+1s",
                                                  "30",
                                                  "0",
                                                  "1.5",
                                                  "1m30",
                                                  "1.2.3s",
                                                  "s",
                                                  "ms",
                                                  ".s",
                                                  "1s.",
                                                  " 30s",
                                                  "30s ",
                                                  "1m 30s",
                                                  "30S",
                                                  "5M",
                                                  "250MS",
                                                  "30x",
                                                  "1d",
                                                  "30sec",
                                                  "1e3s",
                                                  "0x10s",
                                                  "5" + kMicroSign,
                                                  kMicroSign + "s",
                                                  "30s\n"};
  for (const auto& bad : ungrammatical) {
    INFO(bad);
    REQUIRE_FALSE(parse_duration(bad));
    CHECK_FALSE(std::regex_search(bad, pattern));
  }
}
