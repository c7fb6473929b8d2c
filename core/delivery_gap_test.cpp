// DeliveryGap on its own: when a jump in the consumer sequence holds, above which stream sequence,
// and each of the three ways a hold ends (R32-R35). dispatch_core_gap_test.cpp shows what the core
// does while one holds.

#include "delivery_gap.hpp"

#include <catch2/catch.hpp>

using namespace jetfan;
using std::chrono::milliseconds;

namespace {

const Duration kKeepalive = milliseconds(1000);  // AckWait 3 s
const TimePoint kStart{};
constexpr std::int64_t kWall = 1'000'000'000'000;  // jetfan's wall clock at kStart, in ns

std::int64_t wall_at(Duration since_start) {
  return kWall + std::chrono::duration_cast<std::chrono::nanoseconds>(since_start).count();
}

// Consumer deliveries 1..3 of stream sequences 1..3, in order: no hold.
DeliveryGap after_three_in_order() {
  DeliveryGap gap(kKeepalive);
  for (std::uint64_t n = 1; n <= 3; ++n) {
    REQUIRE(gap.check(n, kWall, kStart) == 0);
    REQUIRE(!gap.arrived(n, true, 0, kStart));
  }
  REQUIRE(!gap.held());
  return gap;
}

}  // namespace

TEST_CASE("delivery gap: deliveries in order, a redelivery and an unknown number hold nothing", "[unit]") {
  DeliveryGap gap = after_three_in_order();
  CHECK(gap.check(0, kWall, kStart) == 0);  // not known: not checked
  CHECK(gap.check(4, kWall, kStart) == 0);
  CHECK(!gap.arrived(2, false, 0, kStart));
  CHECK(!gap.held());
  CHECK(!gap.holds(100));
  CHECK(!gap.let_go_at());
}

TEST_CASE("delivery gap: a jump holds what lies above the highest first delivered, until it is back", "[unit]") {
  DeliveryGap gap = after_three_in_order();
  // Deliveries 4 and 5 (of sequences 4 and 5) are lost; delivery 6 is sequence 6.
  CHECK(gap.check(6, kWall, kStart) == 2);
  CHECK(gap.held());
  CHECK(gap.floor() == 3);
  CHECK(!gap.holds(3));
  CHECK(gap.holds(4));
  CHECK(!gap.arrived(6, true, 0, kStart));  // 4 and 5 are now known to be missing
  CHECK(gap.check(7, kWall, kStart) == 0);
  CHECK(!gap.arrived(4, false, 0, kStart));
  CHECK(gap.held());
  CHECK(gap.check(8, kWall, kStart) == 0);
  CHECK(gap.arrived(5, false, 0, kStart) == DeliveryGap::End::kBack);
  CHECK(!gap.held());
}

TEST_CASE("delivery gap: a redelivery that comes before the first first-delivery after the jump counts", "[unit]") {
  DeliveryGap gap = after_three_in_order();
  CHECK(gap.check(6, kWall, kStart) == 2);
  CHECK(!gap.arrived(5, false, 0, kStart));  // back early, above F
  CHECK(gap.check(7, kWall, kStart) == 0);
  CHECK(!gap.arrived(6, true, 0, kStart));  // so only 4 is missing
  CHECK(gap.check(8, kWall, kStart) == 0);
  CHECK(gap.arrived(4, false, 0, kStart) == DeliveryGap::End::kBack);
}

TEST_CASE("delivery gap: proof by a message stored after the proof time, or by a later pull's answer", "[unit]") {
  const Duration hold = gap_hold(kKeepalive);
  SECTION("a message stored after it") {
    DeliveryGap gap = after_three_in_order();
    CHECK(gap.check(6, kWall, kStart) == 2);
    CHECK(!gap.arrived(6, true, 0, kStart));
    const TimePoint later = kStart + hold;
    CHECK(gap.check(7, wall_at(hold), later) == 0);
    CHECK(!gap.arrived(7, true, static_cast<std::uint64_t>(wall_at(hold) - 1), later));  // stored before
    CHECK(gap.check(8, wall_at(hold), later) == 0);
    CHECK(gap.arrived(8, true, static_cast<std::uint64_t>(wall_at(hold)), later) == DeliveryGap::End::kProof);
  }
  SECTION("an answer to a pull request sent after it") {
    DeliveryGap gap = after_three_in_order();
    CHECK(gap.check(6, kWall, kStart) == 2);
    CHECK(!gap.heard(kStart + hold - milliseconds(1), kStart + hold));  // asked before the proof time
    CHECK(!gap.heard(kStart + hold, kStart + hold - milliseconds(1)));  // not yet the proof time
    CHECK(gap.heard(kStart + hold, kStart + hold) == DeliveryGap::End::kProof);
  }
  SECTION("without jetfan's wall clock, no stored message proves it") {
    DeliveryGap gap = after_three_in_order();
    CHECK(gap.check(6, 0, kStart) == 2);
    CHECK(!gap.arrived(6, true, 0, kStart));
    CHECK(gap.check(7, 0, kStart + hold) == 0);
    CHECK(!gap.arrived(7, true, static_cast<std::uint64_t>(wall_at(10 * hold)), kStart + hold));
    CHECK(gap.held());
  }
}

TEST_CASE("delivery gap: let go at gap_let_go after the jump, and a second jump moves it later", "[unit]") {
  DeliveryGap gap = after_three_in_order();
  CHECK(gap.check(6, kWall, kStart) == 2);
  CHECK(gap.let_go_at() == kStart + gap_let_go(kKeepalive));
  const TimePoint second = kStart + milliseconds(500);
  CHECK(gap.check(9, kWall, second) == 2);  // 7 and 8 lost too, before 6 arrived: one range
  CHECK(gap.floor() == 3);
  CHECK(gap.let_go_at() == second + gap_let_go(kKeepalive));
  CHECK(!gap.tick(kStart + gap_let_go(kKeepalive)));
  CHECK(gap.tick(second + gap_let_go(kKeepalive)) == DeliveryGap::End::kLetGo);
  CHECK(!gap.held());
}

TEST_CASE("delivery gap: a jump back holds nothing, and bound() sets where counting starts", "[unit]") {
  DeliveryGap gap(kKeepalive);
  gap.bound(10, 40);
  CHECK(gap.check(11, kWall, kStart) == 0);
  CHECK(!gap.arrived(41, true, 0, kStart));
  CHECK(gap.check(5, kWall, kStart) == 0);  // a new leader with an older record
  CHECK(!gap.held());
  CHECK(gap.check(7, kWall, kStart) == 1);
  CHECK(gap.floor() == 41);
}

TEST_CASE("delivery gap: too many to count ends only by proof or let-go", "[unit]") {
  DeliveryGap gap = after_three_in_order();
  CHECK(gap.check(6, kWall, kStart) == 2);
  CHECK(!gap.arrived(1'000'000, true, 0, kStart));  // a filtered consumer of a busy stream
  CHECK(gap.check(7, kWall, kStart) == 0);
  CHECK(!gap.arrived(4, false, 0, kStart));
  CHECK(!gap.arrived(5, false, 0, kStart));
  CHECK(gap.held());
  CHECK(gap.tick(kStart + gap_let_go(kKeepalive)) == DeliveryGap::End::kLetGo);
}

TEST_CASE("delivery gap: a consumer made anew numbers from 1 without a jump back or a hold", "[unit]") {
  DeliveryGap gap = after_three_in_order();
  gap.new_consumer();
  CHECK(gap.check(1, kWall, kStart) == 0);
  CHECK(!gap.arrived(2, true, 0, kStart));
  CHECK(gap.check(3, kWall, kStart) == 1);
  CHECK(gap.floor() == 2);  // the highest first delivered since it was made
}
