// PUB, a handler's publish through jetfan (protocol version 3, PROTOCOL.md "Publishing"), against
// the real daemon. jetfan does not publish for handlers yet: every PUB is answered PUBERR, what is
// wrong with the PUB itself named first, nothing reaches the server, and the connection goes on.

#include <catch2/catch.hpp>

#include "mesh.hpp"
#include "raw_peer.hpp"

using namespace jetfan::testing;
using jetfan::proto::Frame;

namespace {

const std::string kBuilder = "  - name: builder\n    patterns: [\"#\"]\n";

// The next frame that is not a MSG (a test may have one in flight), which must be a PUBERR.
Frame next_puberr(RawPeer& peer) {
  for (;;) {
    auto frame = peer.next();
    REQUIRE(frame);
    if (frame->kind == Frame::Kind::kMsg) continue;
    REQUIRE(frame->kind == Frame::Kind::kPubErr);
    return *frame;
  }
}

// Says HELLO as `handler` in protocol version 3 and checks that READY says 3.
void hello_v3(RawPeer& peer, const std::string& handler = "builder") {
  peer.send("HELLO " + handler + " 3\r\n");
  const auto ready = peer.next();
  REQUIRE(ready);
  REQUIRE(ready->kind == Frame::Kind::kReady);
  REQUIRE(ready->ready.version == 3);
}

}  // namespace

TEST_CASE("a PUB is answered PUBERR, naming what is wrong with it first, and the connection goes on", "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config(kBuilder));
  RawPeer peer(mesh.socket_path());
  hello_v3(peer);
  mesh.publish("a.b", "in");
  const auto msg = next_msg(peer);

  struct Case {
    std::string bytes;
    std::uint64_t id;
    std::string code;
    std::string reason_has;
  };
  const std::string big(1024 * 1024 + 1, 'x');
  const Case cases[] = {
      {"PUB 1 a..b 0 1\r\nx\r\n", 1, "bad-subject", "not a subject"},
      {"PUB 2 a.* 0 1\r\nx\r\n", 2, "bad-subject", "wildcard"},
      {"PUB 3 a.b 8 9\r\nA: 1\r\n\r\nx\r\n", 3, "bad-headers", "NATS/1.0"},
      {"PUB 4 a.b 0 " + std::to_string(big.size()) + "\r\n" + big + "\r\n", 4, "too-large", "1048577 bytes"},
      {"PUB 5 a.b 0 1 999 0\r\nx\r\n", 5, "not-in-flight", "delivery 999"},
      {"PUB 6 out.made 0 2 " + std::to_string(msg.delivery.id) + " 0\r\nok\r\n", 6, "not-allowed",
       "handler \"builder\" may not publish to \"out.made\""},
      {"PUB 7 out.made 12 14\r\nNATS/1.0\r\n\r\nok\r\n", 7, "not-allowed", "does not publish for handlers yet"},
  };
  for (const auto& c : cases) {
    INFO(c.code << ": " << c.bytes.substr(0, 40));
    peer.send(c.bytes);
    const auto answer = next_puberr(peer);
    CHECK(answer.publish.id == c.id);
    CHECK(answer.publish.code == c.code);
    CHECK_THAT(answer.publish.reason, Catch::Contains(c.reason_has));
  }
  // The connection goes on: the delivery the tied PUB named is still there to confirm.
  peer.send("ACK " + std::to_string(msg.delivery.id) + "\r\n");
  CHECK(mesh.wait_settled());
  CHECK(mesh.controller().stream_messages("EVENTS") == 1);  // nothing was published
}

TEST_CASE("PUB on a version 2 connection is an unknown verb: ERR, and the connection is closed", "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config(kBuilder));
  RawPeer peer(mesh.socket_path());
  peer.send("HELLO builder 2\r\nPUB 1 a.b 0 1\r\nx\r\n");
  REQUIRE(peer.next()->kind == Frame::Kind::kReady);
  const auto err = peer.next();
  REQUIRE(err);
  CHECK(err->kind == Frame::Kind::kErr);
  CHECK_THAT(err->error, Catch::Contains("PUB"));
  CHECK(peer.wait_closed());
}

TEST_CASE("a PUB whose body breaks the framing is a protocol error: ERR, closed, and its delivery comes again",
          "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config(kBuilder, "delivery:\n  nak_delay: 50ms\n"));
  RawPeer peer(mesh.socket_path());
  hello_v3(peer);
  mesh.publish("a.b", "in");
  const auto first = next_msg(peer);
  peer.send("PUB 1 a.b 0 1\r\nxy\r\n");  // one byte announced, two sent
  for (;;) {
    const auto frame = peer.next();
    REQUIRE(frame);
    if (frame->kind != Frame::Kind::kErr) continue;
    CHECK_THAT(frame->error, Catch::Contains("PUB body not followed by"));
    break;
  }
  CHECK(peer.wait_closed());
  RawPeer again(mesh.socket_path());
  hello_v3(again);
  const auto redelivered = next_msg(again);
  CHECK(redelivered.delivery.stream_seq == first.delivery.stream_seq);
  again.send("ACK " + std::to_string(redelivered.delivery.id) + "\r\n");
  CHECK(mesh.wait_settled());
}
