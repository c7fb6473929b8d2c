// HandlerTable on its own, with real HandlerSessions on socketpairs and an owner that only counts
// (test_sessions.hpp).

#include <catch2/catch.hpp>

#include <memory>
#include <vector>

#include "handler_table.hpp"
#include "test_sessions.hpp"

using namespace jetfan;

TEST_CASE("handler table: admitted instances are counted per handler, and forgotten when they close", "[unit]") {
  testing::Sessions sessions;
  HandlerTable table(3, ConnectionLimits{10, 10});
  sessions.owner.table = &table;
  auto a = sessions.make(), b = sessions.make(), c = sessions.make();
  table.add(a);
  table.add(b);
  table.add(c);
  CHECK(table.size() == 3);
  CHECK(table.connected() == 0);
  CHECK(table.without_instance() == 3);
  sessions.admit(table, *b, 2, "builder", 1000);
  sessions.admit(table, *a, 2, "builder", 3000);
  CHECK(table.instances(2) == 2);
  CHECK(table.connected() == 2);
  CHECK(table.without_instance() == 2);
  CHECK(table.find(a->id()) == a.get());
  CHECK(table.find(99) == nullptr);
  const auto views = table.instance_views(2, 5000);
  REQUIRE(views.size() == 2);
  CHECK(views[0].connection == a->id());  // by connection id
  CHECK(views[0].connected_unix_ms == 3000);
  CHECK(views[0].connected_seconds == Approx(2.0));
  CHECK(views[1].connected_unix_ms == 1000);
  REQUIRE(table.socket_io("builder") != nullptr);
  CHECK(table.socket_io("audit") == nullptr);
  CHECK(table.closed(*a));
  CHECK_FALSE(table.closed(*c));  // never admitted: no instance to uncount
  CHECK_FALSE(table.closed(*c));  // and gone already
  CHECK(table.instances(2) == 1);
  CHECK(table.size() == 1);
  table.close_all();
  CHECK(table.size() == 0);
  CHECK(table.connected() == 0);
  CHECK(sessions.owner.closed >= 1);  // b's on_closed found nothing left to forget
}

TEST_CASE("handler table: past max_unidentified the oldest silent connection goes, past max_connections the newest",
          "[unit]") {
  testing::Sessions sessions;
  {
    HandlerTable table(1, ConnectionLimits{10, 2});
    auto first = sessions.make(), second = sessions.make(), third = sessions.make();
    table.add(first);
    table.add(second);
    CHECK_FALSE(first->ending());
    table.add(third);  // a third silent one: the oldest silent one is evicted, not the newcomer
    CHECK(first->ending());
    CHECK_FALSE(second->ending());
    CHECK_FALSE(third->ending());
  }
  {
    // A connection that said HELLO is no longer among the silent ones, and is never evicted.
    HandlerTable table(1, ConnectionLimits{10, 1});
    auto admitted = sessions.make(), silent = sessions.make(), newcomer = sessions.make();
    table.add(admitted);
    sessions.admit(table, *admitted, 0, "builder", 0);
    table.add(silent);
    table.add(newcomer);
    CHECK_FALSE(admitted->ending());
    CHECK(silent->ending());
    CHECK_FALSE(newcomer->ending());
  }
  {
    HandlerTable table(1, ConnectionLimits{3, 5});
    table.limit_connections(2);  // the descriptor limit leaves room for two
    CHECK(table.limits().max_connections == 2);
    auto first = sessions.make(), second = sessions.make(), third = sessions.make();
    table.add(first);
    table.add(second);
    table.add(third);
    CHECK_FALSE(first->ending());
    CHECK_FALSE(second->ending());
    CHECK(third->ending());
  }
}

TEST_CASE("handler table: a reload moves instances with their handler, and hands back those of removed ones",
          "[unit]") {
  testing::Sessions sessions;
  HandlerTable table(3, ConnectionLimits{10, 10});
  auto a = sessions.make(), b = sessions.make(), c = sessions.make();
  for (const auto& session : {a, b, c}) table.add(session);
  sessions.admit(table, *a, 0, "audit", 0);
  sessions.admit(table, *b, 1, "gone", 0);
  sessions.admit(table, *c, 2, "builder", 0);
  std::vector<std::size_t> dismissed_per_old;
  // audit stays first, gone is removed, builder moves to 1, a new handler is 2.
  const auto dismissed = table.reindex({0, std::nullopt, 1}, 3, dismissed_per_old);
  REQUIRE(dismissed.size() == 1);
  CHECK(dismissed[0] == b);
  CHECK(dismissed_per_old == std::vector<std::size_t>{0, 1, 0});
  CHECK_FALSE(b->handler());
  CHECK(c->handler() == 1u);
  CHECK(table.instances(0) == 1);
  CHECK(table.instances(1) == 1);
  CHECK(table.instances(2) == 0);
  CHECK_FALSE(table.closed(*b));  // no instance any more: nothing to uncount
  CHECK(table.closed(*c));
  CHECK(table.instances(1) == 0);
}
