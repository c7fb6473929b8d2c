// The C++ client's Delivery as a scripted jetfan sends it on a real Unix socket: which fields each
// protocol version fills. (Against the real jetfan: tests/client_test.cpp.)
#include "handler_client.hpp"

#include <catch2/catch.hpp>

#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>

namespace {

const std::string kTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

// Plays jetfan for one connection: reads HELLO, answers READY in the version both speak (at most
// 3), sends `frames` in that version, then waits for the client to close.
class ScriptedJetfan {
 public:
  ScriptedJetfan() {
    char dir[] = "/tmp/jetfan-client-test-XXXXXX";
    if (::mkdtemp(dir) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = dir;
    path_ = dir_ + "/jetfan.sock";
    listener_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path_.c_str(), sizeof(address.sun_path) - 1);
    if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(listener_, 1) != 0) {
      throw std::runtime_error("cannot listen on " + path_);
    }
  }
  ~ScriptedJetfan() {
    if (thread_.joinable()) thread_.join();
    ::close(listener_);
    std::filesystem::remove_all(dir_);
  }
  ScriptedJetfan(const ScriptedJetfan&) = delete;
  ScriptedJetfan& operator=(const ScriptedJetfan&) = delete;

  const std::string& path() const { return path_; }

  // `frames(version)`: what to send after READY on a connection of that version.
  template <typename Frames>
  void serve(Frames frames) {
    thread_ = std::thread([this, frames] {
      pollfd p{listener_, POLLIN, 0};
      if (::poll(&p, 1, 10000) != 1) return;
      const int peer = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
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
  std::string dir_;
  std::string path_;
  int listener_ = -1;
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
