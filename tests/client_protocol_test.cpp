// The C++ client against a scripted peer on a real Unix socket, for what the real jetfan cannot be
// made to do on cue: send PING, send more than max-unconfirmed (as it does after ack timeouts),
// send ERR mid-connection, reuse a delivery id on a new connection, send garbage.

#include <catch2/catch.hpp>

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "background.hpp"
#include "handler_client.hpp"
#include "mesh.hpp"
#include "unique_fd.hpp"

using namespace jetfan::testing;
using jetfan::ClientError;
using jetfan::Delivery;
using jetfan::HandlerClient;
using jetfan::Outcome;
using jetfan::UniqueFd;

namespace {

// Background threads use it too, and Catch's assertions are for the test's own thread: a failure
// here throws, and Background::join() rethrows it there.
void check(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error("scripted jetfan: " + what);
}

// Plays jetfan: listens, accepts one connection at a time, reads lines, sends bytes.
class ScriptedJetfan {
 public:
  explicit ScriptedJetfan(const std::string& path) : listener_(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
    check(::bind(listener_.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) == 0, "bind");
    check(::listen(listener_.get(), 4) == 0, "listen");
  }
  void accept() {
    pollfd p{listener_.get(), POLLIN, 0};
    check(::poll(&p, 1, 20000) == 1, "no connection in 20 s");
    peer_ = UniqueFd(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    check(static_cast<bool>(peer_), "accept");
    buffer_.clear();
  }
  // The next line from the client without its line end; "" at end of stream or after 20 s.
  std::string line() {
    for (;;) {
      if (const auto end = buffer_.find("\r\n"); end != std::string::npos) {
        std::string line = buffer_.substr(0, end);
        buffer_.erase(0, end + 2);
        return line;
      }
      pollfd p{peer_.get(), POLLIN, 0};
      if (::poll(&p, 1, 20000) != 1) return "";
      char chunk[4096];
      const ssize_t n = ::recv(peer_.get(), chunk, sizeof chunk, 0);
      if (n <= 0) return "";
      buffer_.append(chunk, static_cast<std::size_t>(n));
    }
  }
  void send(const std::string& bytes) {
    check(::send(peer_.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size()), "send");
  }
  void close_peer() { peer_.reset(); }
  // Accepts and answers HELLO as a jetfan that speaks only protocol version 1 does: the client's
  // HELLO 3 (the latest) is refused, and the client comes again at once with HELLO 1.
  void greet(int max_unconfirmed) {
    accept();
    check(line() == "HELLO builder 3", "expected HELLO builder 3");
    send("ERR protocol version 3 is not supported; this jetfan speaks version 1\r\n");
    close_peer();
    accept();
    check(line() == "HELLO builder 1", "expected HELLO builder 1 after the refusal");
    send("READY 1 builder " + std::to_string(max_unconfirmed) + " #\r\n");
  }

 private:
  UniqueFd listener_;
  UniqueFd peer_;
  std::string buffer_;
};

std::string msg(int id, const std::string& payload) {
  return "MSG " + std::to_string(id) + " a.b " + std::to_string(id) + " 1 0 " + std::to_string(payload.size()) +
         "\r\n" + payload + "\r\n";
}

const auto kQuiet = [](std::string_view) {};

}  // namespace

TEST_CASE("C++ client: against a jetfan that speaks only version 1, it falls back to version 1", "[integration]") {
  Mesh mesh({.start_server = false});
  ScriptedJetfan jetfan(mesh.socket_path());
  Background greeter([&] { jetfan.greet(4); });
  HandlerClient client(mesh.socket_path(), "builder", {.log = kQuiet});
  greeter.join();
  CHECK(client.ready().version == 1);
  CHECK(client.connections() == 1);
  jetfan.send(msg(1, "old"));
  const auto delivery = client.next();
  REQUIRE(delivery);
  CHECK(delivery->payload == "old");
  CHECK_FALSE(delivery->published);
  CHECK(delivery->subject.empty());
  client.ack(*delivery);
  client.flush();
  CHECK(jetfan.line() == "ACK 1");
}

TEST_CASE("C++ client: run() holds no more than max-unconfirmed, even when jetfan sends more, answers PING",
          "[integration]") {
  Mesh mesh({.start_server = false});
  ScriptedJetfan jetfan(mesh.socket_path());
  Background greeter([&] { jetfan.greet(2); });
  HandlerClient client(mesh.socket_path(), "builder", {.log = kQuiet});
  greeter.join();
  // As after two ack timeouts: four deliveries out at once, then a PING.
  jetfan.send(msg(1, "a") + msg(2, "b") + msg(3, "c") + msg(4, "d") + "PING\r\n");
  std::mutex mutex;
  std::condition_variable changed;
  int running = 0, peak = 0;
  bool open = false;
  Background runner(
      [&] {
        client.run(
            [&](const Delivery&) {
              std::unique_lock lock(mutex);
              peak = std::max(peak, ++running);
              changed.notify_all();
              changed.wait(lock, [&] { return open; });
              --running;
              return Outcome::ack();
            },
            {.workers = 8});
      },
      [&] {
        client.stop();
        std::lock_guard lock(mutex);
        open = true;
        changed.notify_all();
      });
  {
    std::unique_lock lock(mutex);
    REQUIRE(changed.wait_for(lock, 20s, [&] { return running >= 2; }));
    open = true;
    changed.notify_all();
  }
  // Had the client read on while holding two, its PONG would come before any ACK.
  std::vector<std::string> lines;
  for (std::string line; (line = jetfan.line()) != "PONG";) {
    REQUIRE(!line.empty());
    lines.push_back(line);
  }
  REQUIRE(!lines.empty());
  CHECK_THAT(lines.front(), Catch::StartsWith("ACK "));
  while (lines.size() < 4) lines.push_back(jetfan.line());
  std::sort(lines.begin(), lines.end());
  CHECK(lines == std::vector<std::string>{"ACK 1", "ACK 2", "ACK 3", "ACK 4"});
  client.stop();
  runner.join();
  CHECK(peak == 2);
}

TEST_CASE("C++ client: after a reconnect, a confirmation of the old connection is not sent on the new one",
          "[integration]") {
  Mesh mesh({.start_server = false});
  ScriptedJetfan jetfan(mesh.socket_path());
  Background greeter([&] { jetfan.greet(4); });
  HandlerClient client(mesh.socket_path(), "builder", {.backoff_initial = 10ms, .log = kQuiet});
  greeter.join();
  jetfan.send(msg(1, "old"));
  const auto old = client.next();
  REQUIRE(old);
  jetfan.close_peer();  // a clean close: the client reconnects
  Background again([&] {
    jetfan.greet(4);
    jetfan.send(msg(1, "new"));  // the same wire id, on the new connection
  });
  const auto fresh = client.next();
  again.join();
  REQUIRE(fresh);
  CHECK(fresh->payload == "new");
  CHECK(client.connections() == 2);
  CHECK_FALSE(client.ack(*old));
  CHECK(client.term(*fresh, "why"));
  client.flush();
  CHECK(jetfan.line() == "TERM 1 why");  // and not "ACK 1" first
}

TEST_CASE("C++ client: ERR mid-connection and garbage from jetfan are ClientErrors", "[integration]") {
  Mesh mesh({.start_server = false});
  ScriptedJetfan jetfan(mesh.socket_path());
  Background greeter([&] { jetfan.greet(4); });
  HandlerClient client(mesh.socket_path(), "builder", {.log = kQuiet});
  greeter.join();
  jetfan.send("ERR you are too slow\r\n");
  try {
    client.next();
    FAIL("no error");
  } catch (const ClientError& e) {
    CHECK(e.kind() == ClientError::Kind::kRefused);
    CHECK(e.reason() == "you are too slow");
  }
  // Used again after an ERR, the client connects anew.
  Background again([&] {
    jetfan.greet(4);
    jetfan.send("BOGUS\r\n");
  });
  try {
    client.next();
    FAIL("no error");
  } catch (const ClientError& e) {
    CHECK(e.kind() == ClientError::Kind::kProtocol);
    CHECK(e.code() == jetfan::proto::ErrorCode::kUnknownVerb);
    CHECK_THAT(e.what(), Catch::Contains("unknown-verb") && Catch::Contains("BOGUS"));
  }
  again.join();
}

TEST_CASE("C++ client: an answer to a PUB it never sent is a protocol error", "[integration]") {
  Mesh mesh({.start_server = false});
  ScriptedJetfan jetfan(mesh.socket_path());
  Background greeter([&] {
    jetfan.accept();
    check(jetfan.line() == "HELLO builder 3", "expected HELLO builder 3");
    jetfan.send("READY 3 builder 4 #\r\nPUBOK 9 EVENTS 1 0\r\n");
  });
  HandlerClient client(mesh.socket_path(), "builder", {.reconnect = false, .log = kQuiet});
  greeter.join();
  try {
    client.next();
    FAIL("no error");
  } catch (const ClientError& e) {
    CHECK(e.kind() == ClientError::Kind::kProtocol);
    CHECK_THAT(e.what(), Catch::Contains("answered a PUB (request 9)"));
  }
}
