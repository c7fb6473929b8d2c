#include <catch2/catch.hpp>

#include "order_gate.hpp"

using jetfan::OrderGate;

TEST_CASE("order gate: only the oldest owed of a key passes, one at a time, and keys pass independently", "[unit]") {
  OrderGate gate(2);
  gate.add(0, "a", 10);
  gate.add(0, "a", 12);
  gate.add(0, "b", 11);
  gate.add(0, "a", 10);  // again: nothing changes
  CHECK(gate.entries() == 3);
  CHECK(gate.may_deliver(0, 10));
  CHECK_FALSE(gate.may_deliver(0, 12));
  CHECK(gate.may_deliver(0, 11));
  CHECK(gate.may_deliver(1, 12));  // not ordered for handler 1
  CHECK(gate.may_deliver(0, 99));  // unknown

  gate.started(0, 10);
  CHECK_FALSE(gate.may_deliver(0, 10));  // in flight already
  gate.stopped(0, 10);                   // failed: still owed, and first
  CHECK(gate.may_deliver(0, 10));
  CHECK_FALSE(gate.may_deliver(0, 12));

  gate.started(0, 10);
  CHECK(gate.settle(0, 10) == 12u);
  CHECK(gate.may_deliver(0, 12));
  CHECK(gate.load(0).keys == 2);
  CHECK(gate.load(0).blocked_keys == 0);
  CHECK(gate.settle(0, 12) == std::nullopt);  // the key is empty and gone
  CHECK(gate.settle(0, 11) == std::nullopt);
  CHECK(gate.entries() == 0);
  CHECK(gate.load(0).keys == 0);
}

TEST_CASE("order gate: a later arrival of an older sequence waits behind nothing, but not while one is in flight",
          "[unit]") {
  OrderGate gate(1);
  gate.add(0, "k", 5);
  gate.started(0, 5);
  gate.add(0, "k", 3);  // came back from the server while 5 went out
  CHECK_FALSE(gate.may_deliver(0, 3));
  CHECK(gate.settle(0, 5) == 3u);
  CHECK(gate.may_deliver(0, 3));

  gate.add(0, "k", 7);
  gate.settle(0, 3);
  gate.started(0, 7);
  gate.add(0, "k", 6);
  CHECK(gate.stopped(0, 7) == 6u);  // failed: the older one that came back meanwhile goes first
  CHECK(gate.may_deliver(0, 6));
  CHECK_FALSE(gate.may_deliver(0, 7));
  gate.started(0, 6);
  CHECK(gate.stopped(0, 6) == std::nullopt);
}

TEST_CASE("order gate: counts what waits, forgets a sequence for every handler, and follows a reload", "[unit]") {
  OrderGate gate(3);
  for (std::uint64_t seq = 1; seq <= 4; ++seq) gate.add(1, "k", seq);
  gate.add(2, "k", 2);
  gate.add(2, "k", 3);
  CHECK(gate.load(1).blocked_keys == 1);
  CHECK(gate.load(1).waiting == 3);
  CHECK(gate.key_of(1, 3) == "k");

  const auto next = gate.forget(2);
  CHECK(next == std::vector<std::pair<std::size_t, std::uint64_t>>{{1, 1}, {2, 3}});
  CHECK(gate.entries() == 4);

  gate.reindex({std::nullopt, 0, std::nullopt}, 1);  // 1 becomes 0; 0 and 2 are removed
  CHECK(gate.handler_count() == 1);
  CHECK(gate.entries() == 3);
  CHECK(gate.may_deliver(0, 1));
  CHECK_FALSE(gate.may_deliver(0, 3));
  CHECK(gate.settle(0, 1) == 3u);
}
