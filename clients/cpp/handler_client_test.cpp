// The C++ client's Delivery as a scripted jetfan sends it on a real Unix socket: which fields each
// protocol version fills. (Against the real jetfan: tests/client_test.cpp.)
#include "handler_client.hpp"

#include <catch2/catch.hpp>

#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

const std::string kTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

// A Unix socket listening in a temp dir of its own; both go with it.
struct TempListener {
  TempListener() {
    char made[] = "/tmp/jetfan-client-test-XXXXXX";
    if (::mkdtemp(made) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir = made;
    path = dir + "/jetfan.sock";
    fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || ::listen(fd, 1) != 0) {
      throw std::runtime_error("cannot listen on " + path);
    }
  }
  ~TempListener() {
    ::close(fd);
    std::filesystem::remove_all(dir);
  }
  TempListener(const TempListener&) = delete;
  TempListener& operator=(const TempListener&) = delete;
  std::string dir;
  std::string path;
  int fd = -1;
};

// Plays jetfan for one connection: reads HELLO, answers READY in the version both speak (at most
// 3), sends `frames` in that version, then waits for the client to close.
class ScriptedJetfan {
 public:
  ScriptedJetfan() = default;
  ~ScriptedJetfan() {
    if (thread_.joinable()) thread_.join();
  }
  ScriptedJetfan(const ScriptedJetfan&) = delete;
  ScriptedJetfan& operator=(const ScriptedJetfan&) = delete;

  const std::string& path() const { return listen_.path; }

  // `frames(version)`: what to send after READY on a connection of that version.
  template <typename Frames>
  void serve(Frames frames) {
    thread_ = std::thread([this, frames] {
      pollfd p{listen_.fd, POLLIN, 0};
      if (::poll(&p, 1, 10000) != 1) return;
      const int peer = ::accept4(listen_.fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (peer < 0) return;
      std::string hello;
      char c = 0;
      while (hello.find('\n') == std::string::npos && ::read(peer, &c, 1) == 1) hello.push_back(c);
      // "HELLO h <version>\r\n"
      const auto asked = std::stoul(hello.substr(hello.rfind(' ') + 1));
      const auto version = asked < 3 ? asked : 3;
      const std::string out = "READY " + std::to_string(version) + " h 8 #\r\n" + frames(version);
      for (std::size_t at = 0; at < out.size();) {
        const auto n = ::write(peer, out.data() + at, out.size() - at);
        if (n <= 0) break;
        at += static_cast<std::size_t>(n);
      }
      // Until the client closes (whatever it confirms meanwhile), at most 10 s.
      char sink[256];
      pollfd in{peer, POLLIN, 0};
      while (::poll(&in, 1, 10000) == 1 && ::read(peer, sink, sizeof sink) > 0) {
      }
      ::close(peer);
    });
  }

 private:
  TempListener listen_;
  std::thread thread_;
};

// Two MSGs: the first with `traceparent` (version 3), the second with "-"; versions 1 and 2 have
// no such word.
std::string two_msgs(unsigned long version) {
  if (version >= 3) {
    return "MSG 1 a.b 42 1 0 1 1700000000000000000 ev.a.b 1 " + kTraceparent + "\r\nx\r\n" +
           "MSG 2 a.b 43 1 0 1 1700000000000000000 ev.a.b 1 -\r\ny\r\n";
  }
  if (version == 2) {
    return "MSG 1 a.b 42 1 0 1 1700000000000000000 ev.a.b 1\r\nx\r\n"
           "MSG 2 a.b 43 1 0 1 1700000000000000000 ev.a.b 1\r\ny\r\n";
  }
  return "MSG 1 a.b 42 1 0 1\r\nx\r\nMSG 2 a.b 43 1 0 1\r\ny\r\n";
}

}  // namespace

TEST_CASE("C++ client: a version 3 delivery has jetfan's traceparent, or nullopt for -", "[unit]") {
  ScriptedJetfan jetfan;
  jetfan.serve(two_msgs);
  jetfan::ClientOptions options;
  options.reconnect = false;
  jetfan::HandlerClient client(jetfan.path(), "h", options);
  const auto traced = client.next();
  REQUIRE(traced);
  CHECK(client.ready().version == 3);
  CHECK(traced->payload == "x");
  CHECK(traced->subject == "ev.a.b");
  CHECK(traced->traceparent == kTraceparent);
  const auto untraced = client.next();
  REQUIRE(untraced);
  CHECK(untraced->payload == "y");
  CHECK(untraced->server_deliveries == 1);
  CHECK_FALSE(untraced->traceparent.has_value());
  client.ack(*traced);
  client.ack(*untraced);
  client.stop();
}

TEST_CASE("C++ client: versions 1 and 2 carry no traceparent", "[unit]") {
  for (const std::uint32_t version : {1U, 2U}) {
    INFO("version " << version);
    ScriptedJetfan jetfan;
    jetfan.serve(two_msgs);
    jetfan::ClientOptions options;
    options.reconnect = false;
    options.protocol_version = version;
    jetfan::HandlerClient client(jetfan.path(), "h", options);
    for (const char* payload : {"x", "y"}) {
      const auto msg = client.next();
      REQUIRE(msg);
      CHECK(client.ready().version == version);
      CHECK(msg->payload == payload);
      CHECK(msg->subject == (version == 2 ? "ev.a.b" : ""));
      CHECK_FALSE(msg->traceparent.has_value());
    }
    client.stop();
  }
}

// --- Publishing (protocol version 3), against a jetfan played line by line.

namespace {

using jetfan::Published;
using jetfan::PublishError;

// Plays jetfan for one connection at a time, as the test says: accepts, reads the client's lines and
// bodies, sends bytes. Its calls return "" or false on failure (20 s without data, the end of the
// stream) instead of throwing, so a thread of its own can use it and the test checks what it got.
class LineJetfan {
 public:
  LineJetfan() = default;
  ~LineJetfan() { close_peer(); }
  LineJetfan(const LineJetfan&) = delete;
  LineJetfan& operator=(const LineJetfan&) = delete;

  const std::string& path() const { return listen_.path; }

  // Accepts a connection and answers its HELLO with READY in `version` (at most the client's).
  // Returns the HELLO line.
  std::string greet(unsigned version, unsigned max_unconfirmed = 8) {
    pollfd p{listen_.fd, POLLIN, 0};
    if (::poll(&p, 1, 20000) != 1) return "";
    peer_ = ::accept4(listen_.fd, nullptr, nullptr, SOCK_CLOEXEC);
    std::string hello = line();
    send("READY " + std::to_string(version) + " h " + std::to_string(max_unconfirmed) + " #\r\n");
    return hello;
  }
  // The next line without its "\r\n".
  std::string line() {
    for (;;) {
      if (const auto end = buffer_.find("\r\n"); end != std::string::npos) {
        std::string text = buffer_.substr(0, end);
        buffer_.erase(0, end + 2);
        return text;
      }
      if (!fill()) return "";
    }
  }
  // A body of `size` bytes and the "\r\n" after it, without the "\r\n".
  std::string body(std::size_t size) {
    while (buffer_.size() < size + 2) {
      if (!fill()) return "";
    }
    std::string text = buffer_.substr(0, size);
    buffer_.erase(0, size + 2);
    return text;
  }
  // A PUB line and its body, as "<line>|<body>".
  std::string pub() {
    std::string text = line();
    // PUB <id> <subject> <header-bytes> <total-bytes> [...]: the total is the fifth word.
    std::size_t at = 0;
    for (int word = 0; word < 4 && at != std::string::npos; ++word) at = text.find(' ', at + 1);
    if (text.rfind("PUB ", 0) != 0 || at == std::string::npos) return text;
    return text + "|" + body(std::stoul(text.substr(at + 1)));
  }
  void send(const std::string& bytes) {
    for (std::size_t at = 0; at < bytes.size();) {
      const auto n = ::send(peer_, bytes.data() + at, bytes.size() - at, MSG_NOSIGNAL);
      if (n <= 0) return;
      at += static_cast<std::size_t>(n);
    }
  }
  void close_peer() {
    if (peer_ >= 0) ::close(peer_);
    peer_ = -1;
    buffer_.clear();
  }

 private:
  bool fill() {
    pollfd p{peer_, POLLIN, 0};
    if (::poll(&p, 1, 20000) != 1) return false;
    char chunk[4096];
    const auto n = ::recv(peer_, chunk, sizeof chunk, 0);
    if (n <= 0) return false;
    buffer_.append(chunk, static_cast<std::size_t>(n));
    return true;
  }

  TempListener listen_;
  int peer_ = -1;
  std::string buffer_;
};

std::string msg3(int id, const std::string& payload) {
  return "MSG " + std::to_string(id) + " a.b " + std::to_string(40 + id) + " 1 0 " + std::to_string(payload.size()) +
         " 1700000000000000000 ev.a.b 1 -\r\n" + payload + "\r\n";
}

// What a publish's future throws: its code, or "" when it holds a Published.
std::string error_code(jetfan::HandlerClient& client, std::future<Published> future) {
  try {
    client.wait(std::move(future));
    return "";
  } catch (const PublishError& e) {
    return e.code();
  }
}

const auto kQuiet = [](std::string_view) {};

}  // namespace

TEST_CASE("C++ client: in a pull loop, wait() reads the answers itself and keeps the MSGs it meets for next()",
          "[unit]") {
  LineJetfan jetfan;
  std::thread greeter([&] {
    jetfan.greet(3);
    jetfan.send(msg3(1, "in"));
  });
  jetfan::HandlerClient client(jetfan.path(), "h", {.reconnect = false, .log = kQuiet});
  greeter.join();
  const auto msg = client.next();
  REQUIRE(msg);
  // Made on the thread that calls next(): buffered until wait() (or next()) waits for input.
  auto first = client.publish(*msg, "out.a", "p1");
  auto second = client.publish(*msg, "out.b", "p2", {{"K", "v"}, {"K", "w"}});
  auto seventh = client.publish(*msg, "out.c", "p3", {}, 7);
  auto after = client.publish(*msg, "out.d", "");
  auto untied = client.publish("out.u", "free");
  std::vector<std::string> seen;
  std::thread jetfan_side([&] {
    for (int i = 0; i < 5; ++i) seen.push_back(jetfan.pub());
    // A delivery and a PING before the answers: wait() must not lose them.
    jetfan.send(msg3(2, "met while waiting") + "PING\r\n" +
                "PUBOK 1 OUT 10 0\r\nPUBERR 2 refused stream OUT is full\r\n" +
                "PUBOK 3 OUT 11 1\r\nPUBOK 4 OUT 12 0\r\nPUBOK 5 OUT 13 0\r\n");
    seen.push_back(jetfan.line());
  });
  const Published stored = client.wait(std::move(first));
  CHECK((stored.stream == "OUT" && stored.seq == 10 && !stored.duplicate));
  try {
    client.wait(std::move(second));
    FAIL("no PublishError");
  } catch (const PublishError& e) {
    CHECK(e.code() == "refused");
    CHECK(e.reason() == "stream OUT is full");
    CHECK_FALSE(e.maybe_stored());
  }
  const Published duplicate = client.wait(std::move(seventh));
  const Published empty = client.wait(std::move(after));
  const Published untied_stored = client.wait(std::move(untied));
  CHECK(duplicate.duplicate);
  CHECK(empty.seq == 12);
  CHECK(untied_stored.seq == 13);
  client.flush();  // the PONG
  jetfan_side.join();
  CHECK(seen == std::vector<std::string>{
                    "PUB 1 out.a 0 2 1 0|p1",
                    "PUB 2 out.b 24 26 1 1|NATS/1.0\r\nK: v\r\nK: w\r\n\r\np2",
                    "PUB 3 out.c 0 2 1 7|p3",
                    "PUB 4 out.d 0 0 1 8|",  // one more than the highest index so far
                    "PUB 5 out.u 0 4|free",
                    "PONG",
                });
  const auto met = client.next();
  REQUIRE(met);
  CHECK(met->payload == "met while waiting");
  // A tied publish failed: its delivery's ACK goes as a NAK that says why.
  CHECK(client.ack(*msg));
  CHECK(client.ack(*met));
  client.flush();
  CHECK(jetfan.line() == "NAK 1 - tied publish failed: refused stream OUT is full");
  CHECK(jetfan.line() == "ACK 2");
  client.stop();
}

TEST_CASE("C++ client: a publish that cannot go out fails at once, unsent, and a tied one makes the ACK a NAK",
          "[unit]") {
  LineJetfan jetfan;
  std::thread greeter([&] {
    jetfan.greet(3);
    jetfan.send(msg3(1, "x") + msg3(2, "y"));
  });
  jetfan::HandlerClient client(jetfan.path(), "h", {.reconnect = false, .log = kQuiet});
  greeter.join();
  const auto msg = client.next();
  const auto other = client.next();
  REQUIRE(msg);
  REQUIRE(other);
  CHECK(error_code(client, client.publish("out x", "p")) == "bad-subject");
  CHECK(error_code(client, client.publish("out.*", "p")) == "bad-subject");
  CHECK(error_code(client, client.publish(std::string(1100, 'a'), "p")) == "bad-subject");  // the line: 1024 bytes
  CHECK(error_code(client, client.publish("out.x", "p", {{"Bad Name", "v"}})) == "bad-headers");
  CHECK(error_code(client, client.publish("out.x", "p", {{"K", "two\r\nlines"}})) == "bad-headers");
  CHECK(error_code(client, client.publish(*msg, "out x", "p")) == "bad-subject");
  client.ack(*other);
  CHECK(error_code(client, client.publish(*other, "out.x", "p")) == "not-in-flight");  // confirmed already
  // None was sent, the connection goes on, and the tied one that failed makes its ACK a NAK.
  auto good = client.publish("out.ok", "p");
  client.ack(*msg);
  client.flush();
  CHECK(jetfan.line() == "ACK 2");
  CHECK(jetfan.pub().find(" out.ok 0 1|p") != std::string::npos);
  CHECK(jetfan.line().rfind("NAK 1 - tied publish not sent: bad-subject \"out x\" is not a subject", 0) == 0);
  jetfan.send("PUBOK 1 OUT 1 0\r\n");
  const Published stored = client.wait(std::move(good));
  CHECK(stored.seq == 1);
  client.stop();
}

TEST_CASE("C++ client: on a version 2 connection a publish fails \"unsupported\", and a tied one's ACK is a NAK",
          "[unit]") {
  LineJetfan jetfan;
  std::thread greeter([&] {
    jetfan.greet(2);
    jetfan.send("MSG 1 a.b 42 1 0 1 1700000000000000000 ev.a.b 1\r\nx\r\n");
  });
  jetfan::HandlerClient client(jetfan.path(), "h", {.reconnect = false, .log = kQuiet});
  greeter.join();
  REQUIRE(client.ready().version == 2);
  const auto msg = client.next();
  REQUIRE(msg);
  try {
    client.wait(client.publish("out.x", "p"));
    FAIL("no PublishError");
  } catch (const PublishError& e) {
    CHECK(e.code() == "unsupported");
    CHECK_THAT(e.what(), Catch::Contains("protocol version 2") && Catch::Contains("version 3"));
  }
  CHECK(error_code(client, client.publish(*msg, "out.x", "p")) == "unsupported");
  client.ack(*msg);
  client.flush();
  CHECK(jetfan.line() == "NAK 1");  // a NAK's reason is for version 3
  client.stop();
}

TEST_CASE("C++ client: publishes unanswered when the connection ends fail \"connection-lost\", none while it is gone",
          "[unit]") {
  LineJetfan jetfan;
  std::thread greeter([&] { jetfan.greet(3); });
  jetfan::HandlerClient client(jetfan.path(), "h", {.reconnect = false, .log = kQuiet});
  greeter.join();
  auto lost = client.publish("out.x", "p");
  client.flush();
  CHECK(jetfan.pub() == "PUB 1 out.x 0 1|p");
  jetfan.close_peer();  // read, never answered
  try {
    client.wait(std::move(lost));
    FAIL("no PublishError");
  } catch (const PublishError& e) {
    CHECK(e.code() == "connection-lost");
    CHECK(e.maybe_stored());
  }
  CHECK(error_code(client, client.publish("out.x", "p")) == "not-connected");
  CHECK_FALSE(client.next());  // reconnect is off: the connection's end is next()'s too
}

TEST_CASE("C++ client: run()'s callbacks may block on a publish's future, at max-unconfirmed and through stop()",
          "[unit]") {
  LineJetfan jetfan;
  std::thread greeter([&] {
    jetfan.greet(3, 1);
    jetfan.send(msg3(1, "first"));
  });
  jetfan::HandlerClient client(jetfan.path(), "h", {.log = kQuiet});
  greeter.join();
  std::vector<std::uint64_t> stored;
  std::thread runner([&] {
    client.run([&](const jetfan::Delivery& msg) {
      // future.get(), not wait(): run()'s reading thread reads the answer, although the one
      // delivery jetfan allows is held.
      stored.push_back(client.publish(msg, "out." + msg.payload, msg.payload).get().seq);
      return jetfan::Outcome::ack();
    });
  });
  CHECK(jetfan.pub() == "PUB 1 out.first 0 5 1 0|first");
  jetfan.send("PUBOK 1 OUT 1 0\r\n");
  CHECK(jetfan.line() == "ACK 1");
  jetfan.send(msg3(2, "second"));
  CHECK(jetfan.pub() == "PUB 2 out.second 0 6 2 0|second");
  client.stop();  // the callback still waits for its answer: run() reads on for it
  jetfan.send(msg3(3, "after stop") + "PUBOK 2 OUT 2 0\r\n");
  std::vector<std::string> confirmations{jetfan.line(), jetfan.line()};
  std::sort(confirmations.begin(), confirmations.end());
  // The callback's ACK, and a NAK of what was read while waiting for it: never started.
  CHECK(confirmations == std::vector<std::string>{"ACK 2", "NAK 3"});
  runner.join();
  CHECK(stored == std::vector<std::uint64_t>{1, 2});
}
