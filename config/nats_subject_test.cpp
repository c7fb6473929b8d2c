#include <catch2/catch.hpp>

#include "nats_subject.hpp"

using jetfan::subject_matches;
using jetfan::subject_pattern_error;

TEST_CASE("nats subject: which patterns are patterns", "[unit]") {
  for (const char* good : {"a", "a.b", "*", ">", "a.*", "a.>", "a.*.c", "*.*.>", "$KV.b.>", "a-b_c.\xc3\xa9"}) {
    INFO(good);
    CHECK_FALSE(subject_pattern_error(good));
  }
  for (const char* bad : {"", ".", "a.", ".a", "a..b", "a*", "a.b*", "a.>x", ">.a", "a.>.b", "a b", "a\tb", "a\x7f"}) {
    INFO(bad);
    CHECK(subject_pattern_error(bad));
  }
}

TEST_CASE("nats subject: matching as nats-server matches a subscription", "[unit]") {
  struct Case {
    const char* pattern;
    const char* subject;
    bool matches;
  };
  const Case cases[] = {
      {"a.b", "a.b", true},    {"a.b", "a.c", false}, {"a.b", "a.b.c", false}, {"a.b.c", "a.b", false},
      {"a.*", "a.b", true},    {"a.*", "a", false},   {"a.*", "a.b.c", false}, {"*.b", "a.b", true},
      {"*", "a", true},        {"*", "a.b", false},   {"a.>", "a.b", true},    {"a.>", "a.b.c.d", true},
      {"a.>", "a", false},     {">", "a", true},      {">", "a.b.c", true},    {"a.*.>", "a.b.c", true},
      {"a.*.>", "a.b", false}, {"ab", "a", false},    {"a", "ab", false},      {"a.*.c", "a.x.c", true},
  };
  for (const auto& c : cases) {
    INFO(c.pattern << " ~ " << c.subject);
    CHECK(subject_matches(c.pattern, c.subject) == c.matches);
  }
}
