#pragma once
// For daemon tests: real HandlerSessions on socketpairs (the other end kept open, closed with the
// Sessions), owned by an owner that refuses every HELLO and counts closes, telling a HandlerTable
// when one is set. Long hello and idle timeouts: nothing closes by itself.
//
// Thread: the test's; the io_context is never run.

#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <boost/asio/io_context.hpp>

#include <memory>
#include <string>
#include <vector>

#include "handler_session.hpp"
#include "handler_table.hpp"

namespace jetfan::testing {

class CountingOwner final : public SessionOwner {
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
    session.admit(handler, name, 1, HandlerSession::kDefaultMaxPublishBody);
    table.admitted(session, handler, unix_ms);
  }
  CountingOwner owner;

 private:
  SocketSettings settings_;  // before io_: sessions its handlers still hold refer to it
  std::vector<int> peers_;
  boost::asio::io_context io_;
  ConnectionId next_id_ = 1;
};

}  // namespace jetfan::testing
