#include "settled_record.hpp"

#include <catch2/catch.hpp>

#include <random>
#include <set>

using namespace jetfan;
using Verb = SettledRecord::Verb;

TEST_CASE("settled record: in-order settling is one range", "[unit]") {
  SettledRecord record(1000);
  for (std::uint64_t seq = 1; seq <= 500; ++seq) record.add(seq, Verb::kAcked);
  CHECK(record.ranges() == 1);
  CHECK(record.size() == 500);
  CHECK(record.find(1) == Verb::kAcked);
  CHECK(record.find(500) == Verb::kAcked);
  CHECK_FALSE(record.find(501));
  CHECK_FALSE(record.find(0));
}

TEST_CASE("settled record: gaps fill and join, the verb is kept per sequence", "[unit]") {
  SettledRecord record(1000);
  record.add(1, Verb::kAcked);
  record.add(3, Verb::kAcked);
  CHECK(record.ranges() == 2);
  CHECK_FALSE(record.find(2));
  record.add(2, Verb::kAcked);
  CHECK(record.ranges() == 1);
  record.add(4, Verb::kTerminated);
  CHECK(record.find(4) == Verb::kTerminated);
  CHECK(record.find(3) == Verb::kAcked);
  record.add(4, Verb::kAcked);  // already there: unchanged
  CHECK(record.find(4) == Verb::kTerminated);
  CHECK(record.size() == 4);
}

TEST_CASE("settled record: past its capacity the lowest sequences are forgotten", "[unit]") {
  SettledRecord record(80);  // trimmed to 80 once it holds more than 90
  for (std::uint64_t seq = 1; seq <= 90; ++seq) record.add(seq, seq % 7 == 0 ? Verb::kTerminated : Verb::kAcked);
  CHECK(record.size() == 90);
  record.add(91, Verb::kAcked);
  CHECK(record.size() == 80);
  CHECK_FALSE(record.find(11));
  CHECK(record.find(12) == Verb::kAcked);
  CHECK(record.find(14) == Verb::kTerminated);
  SettledRecord off(0);
  off.add(1, Verb::kAcked);
  CHECK_FALSE(off.find(1));
}

TEST_CASE("settled record: agrees with a plain set under random settling", "[unit]") {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    INFO("seed " << seed);
    std::mt19937 random(seed);
    SettledRecord record(100000);
    std::set<std::uint64_t> acked, termed;
    for (int i = 0; i < 2000; ++i) {
      const std::uint64_t seq = std::uniform_int_distribution<std::uint64_t>(1, 600)(random);
      const bool term = random() % 5 == 0;
      if (!acked.count(seq) && !termed.count(seq)) (term ? termed : acked).insert(seq);
      record.add(seq, term ? Verb::kTerminated : Verb::kAcked);
    }
    for (std::uint64_t seq = 0; seq <= 601; ++seq) {
      const auto found = record.find(seq);
      if (acked.count(seq)) {
        CHECK(found == Verb::kAcked);
      } else if (termed.count(seq)) {
        CHECK(found == Verb::kTerminated);
      } else {
        CHECK_FALSE(found);
      }
    }
    CHECK(record.size() == acked.size() + termed.size());
  }
}
