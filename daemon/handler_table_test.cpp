// HandlerTable on its own, with real HandlerSessions on socketpairs and an owner that only counts.

#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <boost/asio/io_context.hpp>

#include <memory>
#include <vector>

#include "handler_table.hpp"

using namespace jetfan;

namespace {

class Owner final : public SessionOwner {
 public:
  std::optional<std::string> on_hello(HandlerSession&, const proto::Command&) override { return "no"; }
  void on_command(HandlerSession&, const proto::Command&) override {}
  void on_input_consumed(HandlerSession&) override {}
  void on_failing(HandlerSession&, const std::string&) override {}
  bool busy(const HandlerSession&) const override { return false; }
  void on_closed(HandlerSession& session) override {
    ++closed;
    if (table) table->closed(session);
  }
  HandlerTable* table = nullptr;
  int closed = 0;
};

class Sessions {
 public:
  Sessions() {
    settings_.hello_timeout = std::chrono::milliseconds(3600000);
    settings_.idle_timeout = std::chrono::milliseconds(3600000);
  }
  ~Sessions() {
    for (const int fd : peers_) ::close(fd);
  }
  std::shared_ptr<HandlerSession> make() {
    int fds[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) == 0);
    HandlerSession::Socket socket(io_);
    socket.assign(boost::asio::local::stream_protocol(), fds[0]);
    peers_.push_back(fds[1]);
    return std::make_shared<HandlerSession>(std::move(socket), next_id_++, owner, settings_);
  }
  void admit(HandlerTable& table, HandlerSession& session, std::size_t handler, const std::string& name,
             std::int64_t unix_ms) {
    session.admit(handler, name, 1);
    table.admitted(session, handler, unix_ms);
  }
  Owner owner;

 private:
  SocketSettings settings_;  // before io_: sessions its handlers still hold refer to it
  std::vector<int> peers_;
  boost::asio::io_context io_;
  ConnectionId next_id_ = 1;
};

}  // namespace

TEST_CASE("handler table: admitted instances are counted per handler, and forgotten when they close", "[unit]") {
  Sessions sessions;
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
  Sessions sessions;
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
  Sessions sessions;
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
