// OtherReaderCheck: another reader of the durable is seen from consumer info answers, and a lone
// jetfan's transit delays, restarts and reconnects are not taken for one.

#include <catch2/catch.hpp>

#include "other_reader.hpp"

using namespace jetfan;
using std::chrono::milliseconds;
using Server = OtherReaderCheck::Server;
using Own = OtherReaderCheck::Own;

namespace {

constexpr Duration kExpires{5000};
constexpr Duration kPoll{2000};
constexpr Duration kQuiet{30000};

TimePoint at(int poll) { return TimePoint{} + std::chrono::hours(1) + poll * kPoll; }

}  // namespace

TEST_CASE("a lone reader that gets every delivery is never taken for two", "[unit]") {
  OtherReaderCheck check(kExpires, kPoll, kQuiet);
  check.bound(100, at(0) - std::chrono::hours(1));
  std::uint64_t delivered = 100;
  for (int poll = 0; poll < 30; ++poll) {
    // The server is ahead by what is in transit at each answer; jetfan has the rest.
    delivered += 50;
    const Own own{delivered - 7, delivered - 7 - 100, 2};
    CHECK_FALSE(check.observe(at(poll), Server{delivered, 2}, own).seen);
  }
}

TEST_CASE("deliveries that went elsewhere are seen at the second answer that shows them", "[unit]") {
  OtherReaderCheck check(kExpires, kPoll, kQuiet);
  check.bound(10, at(0) - std::chrono::hours(1));
  CHECK_FALSE(check.observe(at(0), Server{10, 1}, Own{10, 0, 1}).seen);  // sets the scene
  CHECK_FALSE(check.observe(at(1), Server{14, 1}, Own{12, 2, 1}).seen);
  // Deliveries 11..14 were made two answers ago; jetfan has 11 and 12 only (13 and 14 elsewhere).
  CHECK_FALSE(check.observe(at(2), Server{14, 1}, Own{12, 2, 1}).seen);
  const auto& verdict = check.observe(at(3), Server{16, 1}, Own{16, 4, 1});
  REQUIRE(verdict.seen);
  CHECK(verdict.deliveries_elsewhere == 2);
  CHECK(verdict.waiting_elsewhere == 0);
}

TEST_CASE("a delay in transit that catches up is no other reader", "[unit]") {
  OtherReaderCheck check(kExpires, kPoll, kQuiet);
  check.bound(0, at(0) - std::chrono::hours(1));
  check.observe(at(0), Server{0, 1}, Own{0, 0, 1});
  check.observe(at(1), Server{40, 1}, Own{10, 10, 1});
  // One answer later 30 of the 40 are still on their way (missed > 0 once) ...
  CHECK_FALSE(check.observe(at(2), Server{40, 1}, Own{10, 10, 1}).seen);
  // ... and then they arrive: it was never twice in a row.
  CHECK_FALSE(check.observe(at(3), Server{40, 1}, Own{40, 40, 1}).seen);
  CHECK_FALSE(check.observe(at(4), Server{40, 1}, Own{40, 40, 1}).seen);
}

TEST_CASE("deliveries lost around a reconnect are accepted, not taken for a reader", "[unit]") {
  OtherReaderCheck check(kExpires, kPoll, kQuiet);
  check.bound(0, at(0) - std::chrono::hours(1));
  check.observe(at(0), Server{0, 1}, Own{0, 0, 1});
  check.observe(at(1), Server{20, 1}, Own{20, 20, 1});
  check.excuse();  // reconnected: 5 deliveries were lost on the way
  CHECK_FALSE(check.observe(at(2), Server{25, 1}, Own{20, 20, 1}).seen);
  CHECK_FALSE(check.observe(at(3), Server{30, 1}, Own{30, 25, 1}).seen);
  CHECK_FALSE(check.observe(at(4), Server{30, 1}, Own{30, 25, 1}).seen);
  // Losses after the excuse count again.
  CHECK_FALSE(check.observe(at(5), Server{33, 1}, Own{30, 25, 1}).seen);
  CHECK_FALSE(check.observe(at(6), Server{33, 1}, Own{30, 25, 1}).seen);
  CHECK(check.observe(at(7), Server{33, 1}, Own{30, 25, 1}).seen);
}

TEST_CASE("pull requests waiting that are not jetfan's are seen once they outlive a pull request", "[unit]") {
  OtherReaderCheck check(kExpires, kPoll, kQuiet);
  check.bound(0, at(0) - std::chrono::hours(1));
  check.observe(at(0), Server{0, 2}, Own{0, 0, 1});
  int poll = 1;
  for (; at(poll) - at(1) < kExpires + kPoll; ++poll) {
    CHECK_FALSE(check.observe(at(poll), Server{0, 2}, Own{0, 0, 1}).seen);
  }
  const auto& verdict = check.observe(at(poll), Server{0, 2}, Own{0, 0, 1});
  REQUIRE(verdict.seen);
  CHECK(verdict.waiting_elsewhere == 1);
  CHECK(verdict.deliveries_elsewhere == 0);
}

TEST_CASE("a crashed predecessor's pull requests expire before they count", "[unit]") {
  OtherReaderCheck check(kExpires, kPoll, kQuiet);
  check.bound(0, at(0) - std::chrono::hours(1));
  check.observe(at(0), Server{0, 3}, Own{0, 0, 1});
  CHECK_FALSE(check.observe(at(1), Server{0, 3}, Own{0, 0, 1}).seen);
  CHECK_FALSE(check.observe(at(2), Server{0, 3}, Own{0, 0, 1}).seen);
  CHECK_FALSE(check.observe(at(3), Server{0, 1}, Own{0, 0, 1}).seen);  // expired
  for (int poll = 4; poll < 20; ++poll) CHECK_FALSE(check.observe(at(poll), Server{0, 1}, Own{0, 0, 1}).seen);
}

TEST_CASE("the verdict clears once nothing was seen of the other reader for a while", "[unit]") {
  OtherReaderCheck check(kExpires, kPoll, kQuiet);
  check.bound(0, at(0) - std::chrono::hours(1));
  check.observe(at(0), Server{0, 1}, Own{0, 0, 1});
  check.observe(at(1), Server{10, 1}, Own{5, 5, 1});
  check.observe(at(2), Server{10, 1}, Own{5, 5, 1});
  REQUIRE(check.observe(at(3), Server{10, 1}, Own{5, 5, 1}).seen);
  int poll = 4;
  for (; at(poll) - at(3) < kQuiet; ++poll) CHECK(check.observe(at(poll), Server{10, 1}, Own{5, 5, 1}).seen);
  CHECK_FALSE(check.observe(at(poll), Server{10, 1}, Own{5, 5, 1}).seen);
  // What it took before is history now; a new theft is seen anew.
  CHECK_FALSE(check.observe(at(poll + 1), Server{12, 1}, Own{5, 5, 1}).seen);
  CHECK_FALSE(check.observe(at(poll + 2), Server{12, 1}, Own{5, 5, 1}).seen);
  CHECK(check.observe(at(poll + 3), Server{12, 1}, Own{5, 5, 1}).seen);
}

TEST_CASE("what is missed while a crashed predecessor's pull requests may live is excused", "[unit]") {
  OtherReaderCheck check(kExpires, kPoll, kQuiet);
  check.bound(50, at(0));
  // The server delivers two into the dead predecessor's requests right after the start.
  for (int poll = 0; poll < 4; ++poll) CHECK_FALSE(check.observe(at(poll), Server{52, 1}, Own{0, 0, 1}).seen);
  for (int poll = 4; poll < 20; ++poll) CHECK_FALSE(check.observe(at(poll), Server{52, 1}, Own{0, 0, 1}).seen);
  // Later thefts are seen.
  CHECK_FALSE(check.observe(at(20), Server{53, 1}, Own{0, 0, 1}).seen);
  CHECK_FALSE(check.observe(at(21), Server{53, 1}, Own{0, 0, 1}).seen);
  CHECK(check.observe(at(22), Server{53, 1}, Own{0, 0, 1}).seen);
}
