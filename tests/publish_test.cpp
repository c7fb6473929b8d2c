// PUB, a handler's publish through jetfan (protocol version 3, PROTOCOL.md "Publishing"), against
// the real daemon and a real nats-server: refusals (what is wrong with the PUB first), publishes
// stored in a stream and answered PUBOK, tied publishes deduplicated across a redelivery, and a
// tied publish that fails turning its delivery's ACK into a failure.

#include <catch2/catch.hpp>

#include <fstream>

#include "mesh.hpp"
#include "raw_peer.hpp"

using namespace jetfan::testing;
using jetfan::proto::Frame;

namespace {

const std::string kBuilder = "  - name: builder\n    patterns: [\"#\"]\n";
const std::string kPublisher =
    "  - name: builder\n    patterns: [\"#\"]\n    publish:\n      subjects: [\"out.>\", \"nowhere.*\"]\n";

// The next frame that is not a MSG (a test may have one in flight), which must be a PUBERR.
Frame next_puberr(RawPeer& peer) {
  for (;;) {
    auto frame = peer.next();
    REQUIRE(frame);
    if (frame->kind == Frame::Kind::kMsg) continue;
    INFO("ERR " << frame->error);
    REQUIRE(frame->kind == Frame::Kind::kPubErr);
    return *frame;
  }
}

// The value of a stored message's header, "" if it has none.
std::string header(const jetfan::example::MeshController::StoredMessage& message, const std::string& name) {
  for (const auto& [key, value] : message.headers) {
    if (key == name) return value;
  }
  return "";
}

// The next frame that is not a MSG, which must be a PUBOK.
Frame next_pubok(RawPeer& peer) {
  for (;;) {
    auto frame = peer.next();
    REQUIRE(frame);
    if (frame->kind == Frame::Kind::kMsg) continue;
    INFO("PUBERR " << frame->publish.code << " " << frame->publish.reason);
    REQUIRE(frame->kind == Frame::Kind::kPubOk);
    return *frame;
  }
}

}  // namespace

TEST_CASE(
    "a PUB of a handler without publish.subjects is answered PUBERR, what is wrong with it first, and the "
    "connection goes on",
    "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config(kBuilder, "delivery:\n  nak_delay: 50ms\n"));
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
       "handler \"builder\" may not publish: it has no publish.subjects"},
      {"PUB 7 out.made 12 14\r\nNATS/1.0\r\n\r\nok\r\n", 7, "not-allowed", "no publish.subjects"},
  };
  for (const auto& c : cases) {
    INFO(c.code << ": " << c.bytes.substr(0, 40));
    peer.send(c.bytes);
    const auto answer = next_puberr(peer);
    CHECK(answer.publish.id == c.id);
    CHECK(answer.publish.code == c.code);
    CHECK_THAT(answer.publish.reason, Catch::Contains(c.reason_has));
  }
  // The connection goes on: the delivery the tied PUB named is still there to confirm, but its ACK
  // counts as a failure (its tied publish was refused), and the message comes again.
  peer.send("ACK " + std::to_string(msg.delivery.id) + "\r\n");
  const auto again = next_msg(peer);
  CHECK(again.delivery.stream_seq == msg.delivery.stream_seq);
  peer.send("ACK " + std::to_string(again.delivery.id) + "\r\n");
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

TEST_CASE("a PUB to a subject the handler may publish to is stored, and answered PUBOK with its stream and sequence",
          "[integration]") {
  Mesh mesh;
  mesh.controller().create_stream("OUT", {"out.>"});
  mesh.start_jetfan(mesh.config(kPublisher));
  RawPeer peer(mesh.socket_path());
  hello_v3(peer);
  peer.send("PUB 1 out.made 22 27\r\nNATS/1.0\r\nTrace: 7\r\n\r\nhello\r\nPUB 2 out.made 0 5\r\nagain\r\n");
  const auto first = next_pubok(peer);
  const auto second = next_pubok(peer);
  CHECK((first.publish.id == 1 && first.publish.stream == "OUT" && first.publish.seq == 1 && !first.publish.duplicate));
  CHECK((second.publish.id == 2 && second.publish.seq == 2));
  const auto stored = mesh.controller().get_message("OUT", 1);
  CHECK(stored.subject == "out.made");
  CHECK(stored.payload == "hello");
  CHECK(header(stored, "Trace") == "7");

  peer.send("PUB 3 other.x 0 1\r\nx\r\n");  // not in its publish.subjects
  auto refused = next_puberr(peer);
  CHECK(refused.publish.code == "not-allowed");
  CHECK_THAT(refused.publish.reason, Catch::Contains("its publish.subjects are out.>, nowhere.*"));
  peer.send("PUB 4 nowhere.x 0 1\r\nx\r\n");  // allowed, but no stream captures it
  refused = next_puberr(peer);
  CHECK((refused.publish.id == 4 && refused.publish.code == "no-stream"));
  CHECK(mesh.controller().stream_messages("OUT") == 2);
}

TEST_CASE("a tied publish made again by a redelivery is stored once: the second is a duplicate of the first",
          "[integration]") {
  Mesh mesh;
  mesh.controller().create_stream("OUT", {"out.>"});
  mesh.start_jetfan(mesh.config(kPublisher, "delivery:\n  nak_delay: 50ms\n"));
  RawPeer peer(mesh.socket_path());
  hello_v3(peer);
  const auto seq = mesh.publish("a.b", "in");
  const auto first = next_msg(peer);
  const std::string tie = " " + std::to_string(first.delivery.id) + " 0\r\nfollow-up\r\n";
  peer.send("PUB 1 out.made 0 9" + tie);
  const auto stored = next_pubok(peer);
  CHECK(!stored.publish.duplicate);
  peer.send("NAK " + std::to_string(first.delivery.id) + "\r\n");  // as if it failed after publishing
  const auto again = next_msg(peer);
  CHECK(again.delivery.stream_seq == seq);
  CHECK(again.delivery.id != first.delivery.id);
  peer.send("PUB 2 out.made 0 9 " + std::to_string(again.delivery.id) + " 0\r\nfollow-up\r\nACK " +
            std::to_string(again.delivery.id) + "\r\n");
  const auto duplicate = next_pubok(peer);
  CHECK(duplicate.publish.duplicate);
  CHECK(duplicate.publish.seq == stored.publish.seq);
  CHECK(mesh.wait_settled());
  CHECK(mesh.controller().stream_messages("OUT") == 1);
  const auto copy = mesh.controller().get_message("OUT", stored.publish.seq);
  CHECK(header(copy, "Nats-Msg-Id") == "jetfan:EVENTS:node1_builder:" + std::to_string(seq) + ":builder:0");
}

TEST_CASE("a tied publish that is not stored turns its delivery's ACK into a failure: the message comes again",
          "[integration]") {
  Mesh mesh;
  mesh.controller().create_stream("OUT", {"out.>"}, 1);  // holds one message and refuses more
  mesh.controller().publish("out.full", "the one it holds");
  mesh.start_jetfan(mesh.config(kPublisher, "delivery:\n  nak_delay: 50ms\n"));
  RawPeer peer(mesh.socket_path());
  hello_v3(peer);
  mesh.publish("a.b", "in");
  const auto first = next_msg(peer);
  // The ACK right behind the PUB: it must wait for the server's answer, which refuses the publish.
  peer.send("PUB 1 out.made 0 1 " + std::to_string(first.delivery.id) + " 0\r\nx\r\nACK " +
            std::to_string(first.delivery.id) + "\r\n");
  const auto refused = next_puberr(peer);
  CHECK(refused.publish.code == "refused");
  const auto again = next_msg(peer);
  CHECK(again.delivery.stream_seq == first.delivery.stream_seq);
  CHECK(again.delivery.deliveries == first.delivery.deliveries + 1);
  peer.send("ACK " + std::to_string(again.delivery.id) + "\r\n");  // nothing tied this time
  CHECK(mesh.wait_settled());
  CHECK(mesh.controller().stream_messages("OUT") == 1);
}

TEST_CASE(
    "at start jetfan warns of a stream a handler publishes to whose duplicate window its redeliveries outlast, "
    "and of a publish subject no stream captures. check --connect says the same",
    "[integration]") {
  Mesh mesh;
  using std::chrono::milliseconds;
  mesh.controller().create_stream("OUT", {"out.>"}, 0, milliseconds(10000));  // 10s
  mesh.controller().create_stream("FINE", {"fine.>"});                        // the default: 2m
  // The consumer: AckWait 30s, MaxDeliver unlimited; the handler gives up after 3 deliveries: 1m30s.
  const std::string config = mesh.config(
      "  - name: builder\n    patterns: [\"#\"]\n    retry: {max_attempts: 3}\n    publish:\n"
      "      subjects: [\"out.>\", \"fine.>\", \"nowhere.*\"]\n");
  mesh.start_jetfan(config);
  const std::string log = mesh.jetfan_log();
  CHECK_THAT(log, Catch::Contains("handler \"builder\" publishes to stream \"OUT\", whose duplicate_window 10s is "
                                  "shorter than AckWait 30s x 3 deliveries = 1m30s"));
  CHECK_THAT(log, Catch::Contains("no stream captures \"nowhere.*\""));
  CHECK(log.find("stream \"FINE\", whose") == std::string::npos);  // 2m is enough: nothing said

  std::ofstream(mesh.dir() + "/check.yaml") << config;
  std::string output;
  CHECK(run_jetfan({"check", "--connect", "-c", mesh.dir() + "/check.yaml"}, mesh.dir(), output) == 0);
  CHECK_THAT(output, Catch::Contains("warn") && Catch::Contains("stream \"OUT\", whose duplicate_window 10s"));
  CHECK_THAT(output, Catch::Contains("ok   handler \"builder\" publishes to stream \"FINE\", whose duplicate_window 2m "
                                     "outlasts its redeliveries (1m30s)"));
  CHECK_THAT(output, Catch::Contains("no stream captures \"nowhere.*\""));
}

TEST_CASE("a PUB body over the server's own max_payload is answered too-large, one within it is stored",
          "[integration]") {
  MeshOptions options;
  options.server_conf = "max_payload: 4096\n";
  Mesh mesh(options);
  mesh.controller().create_stream("OUT", {"out.>"});
  mesh.start_jetfan(mesh.config(kPublisher));
  RawPeer peer(mesh.socket_path());
  hello_v3(peer);
  const std::string over(4097, 'x');
  peer.send("PUB 1 out.big 0 4097\r\n" + over + "\r\n");
  const auto refused = next_puberr(peer);
  CHECK(refused.publish.code == "too-large");
  CHECK_THAT(refused.publish.reason, Catch::Contains("4097 bytes") && Catch::Contains("max_payload"));
  peer.send("PUB 2 out.fits 0 4000\r\n" + std::string(4000, 'y') + "\r\n");
  const auto stored = next_pubok(peer);
  CHECK(stored.publish.id == 2);
  CHECK(mesh.controller().stream_messages("OUT") == 1);
}
