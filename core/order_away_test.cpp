// OrderAway on its own: how long the keys of a message handed back for room wait for it (R23), and
// that each one comes out once. dispatch_core_order_test.cpp shows the core letting its key go.

#include "order_away.hpp"

#include <catch2/catch.hpp>

using namespace jetfan;
using std::chrono::milliseconds;

namespace {
const TimePoint kStart{};
const Duration kKeepalive = milliseconds(500);
}  // namespace

TEST_CASE("order away hold: the hand-back's delay and two AckWaits", "[unit]") {
  CHECK(order_away_hold(milliseconds(1000), kKeepalive) == milliseconds(4000));
  CHECK(order_away_hold(milliseconds(0), milliseconds(100)) == milliseconds(600));
}

TEST_CASE("order away: a message is away until its hold runs out or it is back", "[unit]") {
  OrderAway away(kKeepalive);
  CHECK_FALSE(away.next());
  CHECK_FALSE(away.back(5));
  away.away(5, milliseconds(1000), kStart);
  CHECK(away.is_away(5));
  const TimePoint until = kStart + order_away_hold(milliseconds(1000), kKeepalive);
  CHECK(away.next() == until);
  CHECK(away.take_expired(until - milliseconds(1)).empty());
  CHECK(away.back(5));
  CHECK_FALSE(away.is_away(5));
  CHECK_FALSE(away.back(5));
  CHECK_FALSE(away.next());
  CHECK(away.take_expired(until).empty());
}

TEST_CASE("order away: expired ones come out once in stream order and a later hand-back moves the time", "[unit]") {
  OrderAway away(kKeepalive);
  away.away(9, milliseconds(0), kStart);
  away.away(7, milliseconds(0), kStart);
  away.away(8, milliseconds(2000), kStart);
  away.away(6, milliseconds(1000), kStart);
  away.away(9, milliseconds(3000), kStart);  // handed back again: the new time counts
  CHECK(away.size() == 4);
  CHECK(away.next() == kStart + order_away_hold(milliseconds(0), kKeepalive));
  CHECK(away.take_expired(kStart + order_away_hold(milliseconds(0), kKeepalive)) == std::vector<std::uint64_t>{7});
  CHECK(away.next() == kStart + order_away_hold(milliseconds(1000), kKeepalive));
  CHECK(away.take_expired(kStart + order_away_hold(milliseconds(3000), kKeepalive)) ==
        std::vector<std::uint64_t>{6, 8, 9});
  CHECK(away.size() == 0);
  CHECK_FALSE(away.next());
  CHECK(away.take_expired(kStart + milliseconds(100000)).empty());
}
