// Tied publishes across a crash (PROTOCOL.md "Publishing"): jetfan or nats-server killed with
// SIGKILL between a handler's tied publish and its ACK. Whatever the crash cut, the follow-up ends
// up stored exactly once (the redelivery's publish is a duplicate JetStream drops) and the input is
// acknowledged. Real jetfan, real nats-server, a raw protocol peer as the handler.

#include <catch2/catch.hpp>

#include <map>

#include "mesh.hpp"
#include "raw_peer.hpp"

using namespace jetfan::testing;
using jetfan::proto::Frame;
using namespace std::chrono_literals;

namespace {

const std::string kPublisher =
    "  - name: builder\n    patterns: [\"#\"]\n    publish:\n      subjects: [\"out.>\"]\n      timeout: 2s\n";

// A PUB of request `request`, tied to delivery `delivery` as its publish 0.
std::string tied_pub(std::uint64_t request, std::uint64_t delivery) {
  return "PUB " + std::to_string(request) + " out.made 0 6 " + std::to_string(delivery) + " 0\r\nfollow\r\n";
}

// The next PUBOK or PUBERR, passing over anything else.
Frame next_answer(RawPeer& peer) {
  for (;;) {
    auto frame = peer.next(20s);
    REQUIRE(frame);
    if (frame->kind == Frame::Kind::kPubOk || frame->kind == Frame::Kind::kPubErr) return *frame;
  }
}

std::string msg_id_of(Mesh& mesh, std::uint64_t seq) {
  for (const auto& [name, value] : mesh.controller().get_message("OUT", seq).headers) {
    if (name == "Nats-Msg-Id") return value;
  }
  return "";
}

// Plays the handler until the consumer is settled with a follow-up stored: for each message, a tied
// publish, then its ACK once the publish is answered (stored or not: an ACK after a failed tied
// publish counts as a failure, and the message comes again). False if that takes over `timeout`.
bool publish_and_ack_until_settled(Mesh& mesh, RawPeer& peer, std::uint64_t& request,
                                   std::chrono::seconds timeout = 60s) {
  std::map<std::uint64_t, std::uint64_t> delivery_of;  // request -> delivery
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    const auto frame = peer.next(200ms);
    if (frame && frame->kind == Frame::Kind::kMsg) {
      delivery_of[++request] = frame->delivery.id;
      peer.send(tied_pub(request, frame->delivery.id));
    } else if (frame && (frame->kind == Frame::Kind::kPubOk || frame->kind == Frame::Kind::kPubErr)) {
      // An answer to a publish made before this loop (its ACK went already) needs nothing more.
      const auto made = delivery_of.find(frame->publish.id);
      if (made != delivery_of.end()) peer.send("ACK " + std::to_string(made->second) + "\r\n");
    } else if (!frame) {
      try {
        const auto state = mesh.state();
        if (state.num_pending == 0 && state.num_ack_pending == 0 && mesh.controller().stream_messages("OUT") > 0) {
          return true;
        }
      } catch (const std::exception&) {  // JetStream still recovering from the restart
        mesh.controller_reset();
      }
    }
  }
  return false;
}

}  // namespace

TEST_CASE("jetfan SIGKILLed between a tied publish and its ACK, then restarted, stores the follow-up once",
          "[integration]") {
  const bool answered = GENERATE(true, false);  // killed once the PUBOK came, or right after the PUB went
  INFO((answered ? "killed after the PUBOK" : "killed right after the PUB"));
  MeshOptions options;
  options.ack_wait = 2s;  // the server's redelivery of what the killed jetfan held
  Mesh mesh(options);
  mesh.controller().create_stream("OUT", {"out.>"});
  const std::string config = mesh.config(kPublisher);
  mesh.start_jetfan(config);
  const std::uint64_t seq = mesh.publish("a.b", "in");
  {
    RawPeer peer(mesh.socket_path());
    hello_v3(peer);
    const auto first = next_msg(peer);
    peer.send(tied_pub(1, first.delivery.id));
    if (answered) {
      const auto stored = next_answer(peer);
      REQUIRE(stored.kind == Frame::Kind::kPubOk);
      CHECK_FALSE(stored.publish.duplicate);
    }
    mesh.jetfan().kill_now();
  }
  mesh.start_jetfan(config);
  RawPeer peer(mesh.socket_path());
  hello_v3(peer);
  const auto again = next_msg(peer, 30s);
  CHECK(again.delivery.stream_seq == seq);
  peer.send(tied_pub(1, again.delivery.id));
  const auto stored = next_answer(peer);
  REQUIRE(stored.kind == Frame::Kind::kPubOk);
  if (answered) CHECK(stored.publish.duplicate);  // the first one is there: this one is dropped
  peer.send("ACK " + std::to_string(again.delivery.id) + "\r\n");
  CHECK(mesh.wait_settled());
  CHECK(mesh.controller().stream_messages("OUT") == 1);
  CHECK(msg_id_of(mesh, stored.publish.seq) == "jetfan:EVENTS:node1_builder:" + std::to_string(seq) + ":builder:0");
}

TEST_CASE("nats-server SIGKILLed between a tied publish and its ACK, then restarted, stores the follow-up once",
          "[integration]") {
  MeshOptions options;
  options.ack_wait = 2s;
  Mesh mesh(options);
  mesh.controller().create_stream("OUT", {"out.>"});
  mesh.start_jetfan(mesh.config(kPublisher, "delivery:\n  nak_delay: 50ms\n"));
  mesh.publish("a.b", "in");
  RawPeer peer(mesh.socket_path());
  hello_v3(peer);
  const auto first = next_msg(peer);
  peer.send(tied_pub(1, first.delivery.id));
  mesh.kill_server();
  // The ACK right behind: jetfan holds it until the publish is answered, stored or not.
  peer.send("ACK " + std::to_string(first.delivery.id) + "\r\n");
  mesh.start_server();
  std::uint64_t request = 1;
  CHECK(publish_and_ack_until_settled(mesh, peer, request));
  CHECK(mesh.controller().stream_messages("OUT") == 1);
}
