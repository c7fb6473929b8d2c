#include <catch2/catch.hpp>

#include "duration.hpp"

using jetfan::Duration;
using jetfan::parse_duration;

TEST_CASE("durations accept ms, s, m and h", "[unit]") {
  CHECK(parse_duration("250ms") == Duration(250));
  CHECK(parse_duration("30s") == Duration(30'000));
  CHECK(parse_duration("5m") == Duration(300'000));
  CHECK(parse_duration("2h") == Duration(7'200'000));
  CHECK(parse_duration("0s") == Duration(0));
}

TEST_CASE("durations reject everything else", "[unit]") {
  for (const char* bad :
       {"", "30", "s", "-1s", "1.5s", "30x", " 30s", "30s ", "30 s", "1d", "99999999999999999999ms", "1000000000h"}) {
    INFO(bad);
    CHECK_FALSE(parse_duration(bad));
  }
}
