#include "full_policy.hpp"

#include <catch2/catch.hpp>

using namespace jetfan;
using std::chrono::milliseconds;

namespace {
const TimePoint kStart = TimePoint() + std::chrono::hours(1);

HandlerLoad load(std::size_t owed, std::size_t in_flight = 0) {
  HandlerLoad l;
  l.owed = owed;
  l.in_flight = in_flight;
  return l;
}
}  // namespace

TEST_CASE("when full: only hand_back handlers past their share hand back, keeping their share", "[unit]") {
  const std::vector<HandlerLoad> loads{load(90), load(10), load(60)};
  const auto orders = hand_backs_when_full(loads, {true, true, false}, 90);
  // The share is 90 / 3 = 30: handler 0 owes more and hands back; 1 owes less; 2 holds.
  REQUIRE(orders.size() == 1);
  CHECK(orders[0].handler == 0);
  CHECK(orders[0].keep == 30);
  CHECK(orders[0].owed == 90);
  // A share is never 0, however few are held.
  const auto few = hand_backs_when_full(std::vector<HandlerLoad>{load(2), load(0), load(0)}, {true, true, true}, 2);
  REQUIRE(few.size() == 1);
  CHECK(few[0].keep == 1);
  CHECK(hand_backs_when_full({}, {}, 10).empty());
}

TEST_CASE("when full: a stall is full with nothing settling for stall_after, and names who holds everyone up",
          "[unit]") {
  StallWatch watch(milliseconds(5000));
  // Handler 1 has the most waiting and not in flight (handler 0 is busy working on its own).
  const std::vector<HandlerLoad> loads{load(50, 50), load(40, 0), load(40, 10)};
  using Kind = StallWatch::Verdict::Kind;
  CHECK(watch.look(true, 7, false, loads, kStart).kind == Kind::kFine);  // full from now
  CHECK(watch.look(true, 7, false, loads, kStart + milliseconds(4999)).kind == Kind::kFine);
  const auto stalled = watch.look(true, 7, false, loads, kStart + milliseconds(5000));
  CHECK(stalled.kind == Kind::kStalled);
  CHECK(stalled.handler == 1);
  CHECK(stalled.first);
  CHECK(watch.stalled());
  CHECK(watch.full_since() == kStart);
  const auto again = watch.look(true, 7, false, loads, kStart + milliseconds(6000));
  CHECK(again.kind == Kind::kStalled);
  CHECK_FALSE(again.first);
  // Anything settling starts the wait again; being full no longer ends the stall verdict at once.
  CHECK(watch.look(true, 8, false, loads, kStart + milliseconds(7000)).kind == Kind::kFine);
  CHECK(watch.full_since() == kStart + milliseconds(7000));
  CHECK(watch.look(false, 8, false, loads, kStart + milliseconds(8000)).kind == Kind::kRecovered);
  CHECK_FALSE(watch.stalled());
  CHECK(watch.look(false, 8, false, loads, kStart + milliseconds(9000)).kind == Kind::kFine);
}

TEST_CASE("when full: a look that handed something back is no stall, and ties go to the one owed most", "[unit]") {
  StallWatch watch(milliseconds(1000));
  const std::vector<HandlerLoad> loads{load(10, 5), load(20, 15)};  // 5 waiting each; 1 is owed more
  using Kind = StallWatch::Verdict::Kind;
  watch.look(true, 0, false, loads, kStart);
  CHECK(watch.look(true, 0, true, loads, kStart + milliseconds(2000)).kind == Kind::kFine);
  const auto stalled = watch.look(true, 0, false, loads, kStart + milliseconds(2000));
  CHECK(stalled.kind == Kind::kStalled);
  CHECK(stalled.handler == 1);
}
