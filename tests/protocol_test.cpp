// The handler protocol against the real daemon: garbage and broken limits get ERR and a
// disconnect, nothing else is affected, and nothing owed to anyone is lost.

#include <sys/socket.h>

#include <catch2/catch.hpp>

#include <cerrno>
#include <optional>
#include <thread>

#include "mesh.hpp"
#include "raw_peer.hpp"

using namespace jetfan::testing;
using jetfan::proto::Frame;

namespace {

const std::string kHandlers = "  - name: builder\n    patterns: [\"#\"]\n  - name: audit\n    patterns: [\"a.*\"]\n";
const std::string kShortHello = "delivery:\n  nak_delay: 50ms\n";

std::string shortened_hello(const Mesh& mesh) {
  std::string config = mesh.config(kHandlers, kShortHello);
  config.insert(config.find("handlers:"), "  hello_timeout: 300ms\n");
  return config;
}

// Sends `bytes` on a fresh connection and returns the ERR jetfan answers with; checks it then
// closes the connection.
std::string error_for(const Mesh& mesh, const std::string& bytes) {
  RawPeer peer(mesh.socket_path());
  peer.send(bytes);
  for (;;) {
    auto frame = peer.next();
    REQUIRE(frame);
    if (frame->kind == Frame::Kind::kErr) {
      CHECK(peer.wait_closed());
      return frame->error;
    }
  }
}

}  // namespace

TEST_CASE("bad peers get ERR and are disconnected, a good handler is unaffected", "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(shortened_hello(mesh));
  mesh.start_handler("builder");

  // The refusal names what to fix, but not the other handlers or where the config is.
  CHECK_THAT(error_for(mesh, "HELLO nobody 1\r\n"), Catch::Contains("unknown handler \"nobody\"") &&
                                                        !Catch::Contains("builder") && !Catch::Contains("audit") &&
                                                        !Catch::Contains(mesh.dir()));
  CHECK_THAT(error_for(mesh, "HELLO builder 0\r\n"), Catch::Contains("protocol version 0 is not supported"));
  CHECK_THAT(error_for(mesh, "ACK 1\r\n"), Catch::Contains("expected HELLO first"));
  CHECK_THAT(error_for(mesh, "HELLO audit 1\r\nHELLO audit 1\r\n"), Catch::Contains("HELLO was already said"));
  CHECK_THAT(error_for(mesh, "HELLO audit 1\r\nFROB 7\r\n"), Catch::Contains("unknown command \"FROB\""));
  CHECK_THAT(error_for(mesh, "HELLO audit 1\r\nACK x\r\n"), Catch::Contains("is not a delivery id"));
  CHECK_THAT(error_for(mesh, std::string(3000, 'A')), Catch::Contains("longer than 1024 bytes"));
  CHECK_THAT(error_for(mesh, std::string("\0\xff\x01\n", 4)), Catch::Contains("unknown command"));
  CHECK_THAT(error_for(mesh, ""), Catch::Contains("no HELLO within"));  // nothing said at all
  // A peer that sends part of its HELLO and stalls (as one trickling a byte at a time would) is cut
  // by the same clock, which runs from the connection, not from the last byte.
  CHECK_THAT(error_for(mesh, "HELLO bui"), Catch::Contains("no HELLO within"));

  mesh.publish("z.z", "still works");  // builder's alone
  REQUIRE(mesh.wait_seen("builder", 1));
  REQUIRE(mesh.wait_settled());
  CHECK(count_lines_containing(mesh.jetfan_log(), ") disconnected: ") == 10);
}

TEST_CASE("the ERR reaches a peer that is still writing when jetfan closes", "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config(kHandlers));
  RawPeer peer(mesh.socket_path());
  // 1 MiB without a newline, far more than the socket buffers hold: jetfan reads the first part,
  // finds the line too long and answers ERR while the peer is still writing. A close then would
  // fail the peer's writes (EPIPE), and a peer that gives up on a failed write, as Node's sockets
  // do, never reads the ERR. Lingering, jetfan reads the rest until the peer closes.
  const std::string flood(1024 * 1024, 'A');
  std::size_t sent = 0;
  int send_error = 0;
  std::thread writer([&] {
    std::string_view rest = flood;
    while (!rest.empty()) {
      const ssize_t n = ::send(peer.fd(), rest.data(), rest.size(), MSG_NOSIGNAL);
      if (n <= 0) {
        send_error = errno;
        return;
      }
      rest.remove_prefix(static_cast<std::size_t>(n));
      sent += static_cast<std::size_t>(n);
    }
  });
  std::optional<Frame> frame;
  do {
    frame = peer.next();
  } while (frame && frame->kind != Frame::Kind::kErr);
  writer.join();
  CHECK(send_error == 0);
  CHECK(sent == flood.size());
  REQUIRE(frame);
  CHECK_THAT(frame->error, Catch::Contains("longer than 1024 bytes"));
  // jetfan shut down its side after the ERR: the peer sees the end of the stream.
  CHECK(peer.wait_closed());
}

TEST_CASE("a peer that breaks the protocol with deliveries unconfirmed loses nothing", "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config(kHandlers, kShortHello));
  RawPeer bad(mesh.socket_path());
  bad.send("HELLO audit 1\r\n");
  REQUIRE(bad.next()->kind == Frame::Kind::kReady);
  const auto seq = mesh.publish("a.b", "for both");
  auto msg = bad.next();
  REQUIRE(msg);
  REQUIRE(msg->kind == Frame::Kind::kMsg);
  bad.send("GARBAGE\r\n");
  REQUIRE(bad.next()->kind == Frame::Kind::kErr);
  mesh.start_handler("audit");
  mesh.start_handler("builder");
  REQUIRE(mesh.wait_seen("audit", 1));
  REQUIRE(mesh.wait_settled());
  CHECK(mesh.seen("audit")[0].stream_seq == seq);
  CHECK(mesh.seen("audit")[0].deliveries == 2);
  CHECK(mesh.seen("builder").size() == 1);
}

TEST_CASE("MSG carries the key, sequence, delivery count, NATS headers and a binary payload", "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config(kHandlers));
  RawPeer peer(mesh.socket_path());
  peer.send("hello builder 1\n");  // lower case and a bare \n, as typed into socat
  const auto ready = peer.next();
  REQUIRE(ready->kind == Frame::Kind::kReady);
  CHECK(ready->ready.handler == "builder");
  CHECK(ready->ready.max_unconfirmed == 64);
  CHECK(ready->ready.patterns == std::vector<std::string>{"#"});
  const std::string binary("line\r\nMSG 9 x 1 1 0 0\r\n\0end", 26);
  const auto seq = mesh.controller().publish("events.b.c", binary, {{"Trace-Id", "abc"}});  // builder's alone
  const auto msg = peer.next();
  REQUIRE(msg->kind == Frame::Kind::kMsg);
  CHECK(msg->delivery.key == "b.c");
  CHECK(msg->delivery.stream_seq == seq);
  CHECK(msg->delivery.deliveries == 1);
  CHECK(msg->delivery.payload == binary);
  CHECK_THAT(msg->delivery.headers,
             Catch::StartsWith("NATS/1.0\r\n") && Catch::Contains("Trace-Id: abc\r\n") && Catch::EndsWith("\r\n\r\n"));
  peer.send("ACK 999999\r\n");  // names nothing in flight: ignored, the connection stays
  REQUIRE(peer.sync());
  peer.send("ack " + std::to_string(msg->delivery.id) + "\n");
  REQUIRE(mesh.wait_settled());
}

TEST_CASE("jetfan answers PING with PONG", "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config(kHandlers));
  RawPeer peer(mesh.socket_path());
  peer.send("HELLO builder 1\r\nPING\r\n");
  CHECK(peer.next()->kind == Frame::Kind::kReady);
  CHECK(peer.next()->kind == Frame::Kind::kPong);
}

TEST_CASE("a version 1 and a version 2 handler at once each get the MSG their version promises", "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config(kHandlers));
  RawPeer v1(mesh.socket_path());
  RawPeer v2(mesh.socket_path());
  v1.send("HELLO builder 1\r\n");
  v2.send("HELLO audit 2\r\n");
  const auto ready1 = v1.next();
  const auto ready2 = v2.next();
  REQUIRE(ready1->kind == Frame::Kind::kReady);
  REQUIRE(ready2->kind == Frame::Kind::kReady);
  CHECK(ready1->ready.version == 1);
  CHECK(ready2->ready.version == 2);
  const auto before = std::chrono::system_clock::now();
  const auto seq = mesh.controller().publish("events.a.b", "for both", {{"Trace-Id", "abc"}});
  const auto after = std::chrono::system_clock::now();
  // Each parser reads MSG in its READY's layout: a version 1 peer that got version 2's two extra
  // words would fail with too-many-arguments, and the other way round with missing-argument.
  const auto old_msg = next_msg(v1);
  const auto new_msg = next_msg(v2);
  for (const auto* d : {&old_msg.delivery, &new_msg.delivery}) {
    CHECK(d->key == "a.b");
    CHECK(d->stream_seq == seq);
    CHECK(d->payload == "for both");
    CHECK_THAT(d->headers, Catch::Contains("Trace-Id: abc\r\n"));
  }
  CHECK(old_msg.delivery.subject.empty());
  CHECK(old_msg.delivery.published_ns == 0);
  CHECK(new_msg.delivery.subject == "events.a.b");
  // JetStream's clock and this one are the same machine's; a second either side allows for rounding.
  const auto ns = [](std::chrono::system_clock::time_point t) {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
  };
  CHECK(new_msg.delivery.published_ns + 1'000'000'000 >= ns(before));
  CHECK(new_msg.delivery.published_ns <= ns(after) + 1'000'000'000);
  v1.send("ACK " + std::to_string(old_msg.delivery.id) + "\r\n");
  v2.send("ACK " + std::to_string(new_msg.delivery.id) + "\r\n");
  REQUIRE(mesh.wait_settled());
}
