#include <catch2/catch.hpp>

#include <random>

#include "topic_pattern.hpp"

using jetfan::HandlerMask;
using jetfan::pattern_error;
using jetfan::topic_matches;
using jetfan::TopicMatcher;

namespace {
struct Case {
  const char* pattern;
  const char* key;
  bool matches;
};

// The builder and audit handlers of the example config come first (builder: mesh-build-machine.built
// and mesh-controller.built-before; audit: #), then the semantics of each wildcard.
const Case kCases[] = {
    {"mesh-build-machine.built", "mesh-build-machine.built", true},
    {"mesh-controller.built-before", "mesh-build-machine.built", false},
    {"mesh-build-machine.built", "mesh-controller.built-before", false},
    {"mesh-controller.built-before", "mesh-controller.built-before", true},
    {"mesh-build-machine.built", "mesh-catalog.upgraded", false},
    {"mesh-controller.built-before", "mesh-catalog.upgraded", false},
    {"#", "mesh-controller.built-before", true},
    {"#", "mesh-build-machine.built", true},
    // Literals must match whole tokens.
    {"a.b", "a.b", true},
    {"a.b", "a.bc", false},
    {"a.b", "a", false},
    {"a.b", "a.b.c", false},
    {"a", "a", true},
    // '*' is exactly one token.
    {"a.*", "a.b", true},
    {"a.*", "a", false},
    {"a.*", "a.b.c", false},
    {"*.b", "a.b", true},
    {"*", "a", true},
    {"*", "a.b", false},
    {"a.*.c", "a.b.c", true},
    {"a.*.c", "a.c", false},
    // '#' is zero or more tokens, anywhere.
    {"#", "a", true},
    {"#", "a.b.c", true},
    {"a.#", "a", true},
    {"a.#", "a.b", true},
    {"a.#", "a.b.c", true},
    {"a.#", "b.a", false},
    {"#.c", "c", true},
    {"#.c", "a.b.c", true},
    {"#.c", "a.b.c.d", false},
    {"a.#.c", "a.c", true},
    {"a.#.c", "a.b.c", true},
    {"a.#.c", "a.b.x.c", true},
    {"a.#.c", "a.b.x.d", false},
    {"#.b.#", "b", true},
    {"#.b.#", "a.b.c", true},
    {"#.b.#", "a.c", false},
    {"#.#", "a", true},
    {"a.#.#.b", "a.b", true},
    {"*.#", "a", true},
    {"*.#", "a.b.c", true},
    {"#.*", "a", true},
    {"a.#.*", "a", false},
    {"a.#.*", "a.b", true},
    // '>' is one or more tokens, last.
    {">", "a", true},
    {">", "a.b.c", true},
    {"a.>", "a", false},
    {"a.>", "a.b", true},
    {"a.>", "a.b.c", true},
    {"a.*.>", "a.b", false},
    {"a.*.>", "a.b.c", true},
    {"a.#.>", "a", false},
    {"a.#.>", "a.b", true},
};
}  // namespace

TEST_CASE("the reference matcher follows the table", "[unit]") {
  for (const auto& c : kCases) {
    INFO(c.pattern << " ~ " << c.key);
    CHECK(topic_matches(c.pattern, c.key) == c.matches);
  }
}

TEST_CASE("the trie matcher follows the table, one pattern at a time", "[unit]") {
  for (const auto& c : kCases) {
    INFO(c.pattern << " ~ " << c.key);
    TopicMatcher matcher;
    matcher.add(c.pattern, 3);
    CHECK(matcher.match(c.key) == (c.matches ? HandlerMask{1} << 3 : 0));
  }
}

TEST_CASE("a message is for every pattern that matches it, and nothing else (the builder and audit example)",
          "[unit]") {
  TopicMatcher matcher;
  matcher.add("mesh-build-machine.built", 0);
  matcher.add("mesh-controller.built-before", 0);
  matcher.add("#", 1);
  CHECK(matcher.match("mesh-build-machine.built") == 0b11);
  CHECK(matcher.match("mesh-controller.built-before") == 0b11);
  CHECK(matcher.match("mesh-catalog.upgraded") == 0b10);
}

TEST_CASE("invalid patterns say why", "[unit]") {
  for (const char* bad : {"", "a..b", ".a", "a.", "a*", "a.b#", ">.a", "a.>.b", "a b", "x.*y"}) {
    INFO(bad);
    CHECK(pattern_error(bad));
  }
  for (const char* good : {"a", "#", ">", "*", "a.*.#.>", "mesh-controller.built-before"}) {
    INFO(good);
    CHECK_FALSE(pattern_error(good));
  }
}

TEST_CASE("the trie agrees with the reference on random patterns and keys", "[unit]") {
  std::mt19937 random(20261129);
  const char* tokens[] = {"a", "b", "c", "*", "#", ">"};
  const char* key_tokens[] = {"a", "b", "c", "d"};
  auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(random); };
  for (int round = 0; round < 300; ++round) {
    std::vector<std::string> patterns;
    TopicMatcher matcher;
    const int count = 1 + pick(8);
    while (static_cast<int>(patterns.size()) < count) {
      std::string pattern;
      const int length = 1 + pick(4);
      for (int t = 0; t < length; ++t) pattern += (t ? "." : "") + std::string(tokens[pick(6)]);
      if (pattern_error(pattern)) continue;
      matcher.add(pattern, patterns.size());
      patterns.push_back(pattern);
    }
    for (int k = 0; k < 30; ++k) {
      std::string key;
      const int length = 1 + pick(5);
      for (int t = 0; t < length; ++t) key += (t ? "." : "") + std::string(key_tokens[pick(4)]);
      HandlerMask expected = 0;
      for (std::size_t p = 0; p < patterns.size(); ++p) {
        if (topic_matches(patterns[p], key)) expected |= HandlerMask{1} << p;
      }
      INFO("key " << key);
      CHECK(matcher.match(key) == expected);
      CHECK(matcher.match(key) == expected);  // the cached answer too
    }
  }
}
