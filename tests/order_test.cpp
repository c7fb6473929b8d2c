// Ordered handlers (handlers[].order_by) against a real nats-server and the real jetfan: one message
// of a key at a time, in stream order, through NAKs and crashed instances, while other keys and
// unordered handlers go on. The handlers here are raw peers, so each test decides exactly when a
// message is confirmed.

#include <catch2/catch.hpp>

#include <map>
#include <memory>

#include "mesh.hpp"
#include "raw_peer.hpp"

using namespace jetfan::testing;
using jetfan::proto::Frame;

namespace {

const std::string kFastRetry = "delivery:\n  nak_delay: 50ms\n  nak_delay_max: 200ms\n";

std::string ordered_and_audit(const std::string& order_by) {
  return "  - name: ordered\n    patterns: [\"e.*\"]\n    max_inflight: 16\n    order_by: " + order_by +
         "\n  - name: audit\n    patterns: [\"#\"]\n";
}

std::unique_ptr<RawPeer> hello(const Mesh& mesh, const std::string& name) {
  auto peer = std::make_unique<RawPeer>(mesh.socket_path());
  peer->send("HELLO " + name + " 1\r\n");
  auto ready = peer->next();
  REQUIRE(ready);
  REQUIRE(ready->kind == Frame::Kind::kReady);
  return peer;
}

void ack(RawPeer& peer, const Frame& msg) { peer.send("ACK " + std::to_string(msg.delivery.id) + "\r\n"); }

}  // namespace

TEST_CASE("ordered: a NAK of m1 with m2 to m10 behind it brings m1 again first, then the rest in order",
          "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config(ordered_and_audit("key"), kFastRetry));
  auto peer = hello(mesh, "ordered");
  mesh.start_handler("audit");
  std::vector<std::uint64_t> seqs;
  for (int i = 1; i <= 10; ++i) seqs.push_back(mesh.publish("e.one", "m" + std::to_string(i)));
  const auto other = mesh.publish("e.two");
  // m2 came before e.two: had jetfan sent it at once, it would be on the socket before e.two's MSG.
  const Frame m1 = next_msg(*peer);
  CHECK(m1.delivery.stream_seq == seqs[0]);
  const Frame sentinel = next_msg(*peer);
  CHECK(sentinel.delivery.stream_seq == other);
  ack(*peer, sentinel);
  // The unordered handler of the same messages is not held up.
  REQUIRE(mesh.wait_seen("audit", 11));

  peer->send("NAK " + std::to_string(m1.delivery.id) + "\r\n");
  for (std::size_t i = 0; i < seqs.size(); ++i) {
    const Frame msg = next_msg(*peer);
    INFO("message " << i + 1);
    CHECK(msg.delivery.stream_seq == seqs[i]);
    ack(*peer, msg);
  }
  REQUIRE(mesh.wait_settled());
  const auto state = mesh.state();
  CHECK(state.num_redelivered == 0);  // retried by jetfan, not by the server
}

TEST_CASE(
    "ordered: two instances never have two messages of one key, and one that crashes mid-key is replaced in "
    "order",
    "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config(ordered_and_audit("token:2"), kFastRetry));
  mesh.start_handler("audit");
  std::vector<std::unique_ptr<RawPeer>> peers;
  peers.push_back(hello(mesh, "ordered"));
  peers.push_back(hello(mesh, "ordered"));
  const auto m1 = mesh.publish("e.k", "m1");
  const auto m2 = mesh.publish("e.k", "m2");
  const auto m3 = mesh.publish("e.k", "m3");
  // One instance gets m1; the other gets nothing of the key (PONG comes after any MSG before it).
  std::optional<std::size_t> holder;
  for (std::size_t p = 0; p < peers.size(); ++p) {
    REQUIRE(peers[p]->sync());
    if (auto frame = peers[p]->next(std::chrono::milliseconds(0)); frame && frame->kind == Frame::Kind::kMsg) {
      CHECK_FALSE(holder);
      CHECK(frame->delivery.stream_seq == m1);
      holder = p;
    }
  }
  if (!holder) {
    // m1 may still have been on its way when the first peer synced: wait for it on either.
    for (std::size_t p = 0; p < peers.size() && !holder; ++p) {
      if (auto frame = peers[p]->next(std::chrono::milliseconds(2000)); frame && frame->kind == Frame::Kind::kMsg) {
        CHECK(frame->delivery.stream_seq == m1);
        holder = p;
      }
    }
  }
  REQUIRE(holder);
  const std::size_t survivor = 1 - *holder;
  peers[*holder].reset();  // crashes with m1 unconfirmed

  std::vector<std::uint64_t> got;
  while (got.size() < 3) {
    const Frame msg = next_msg(*peers[survivor]);
    got.push_back(msg.delivery.stream_seq);
    ack(*peers[survivor], msg);
  }
  CHECK(got == std::vector<std::uint64_t>{m1, m2, m3});
  REQUIRE(mesh.wait_settled());
}

TEST_CASE("ordered: one blocked key does not block the others, nor an unordered handler", "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config(ordered_and_audit("key"), kFastRetry));
  auto peer = hello(mesh, "ordered");
  mesh.start_handler("audit");
  const auto a1 = mesh.publish("e.a");
  const auto a2 = mesh.publish("e.a");
  const auto b1 = mesh.publish("e.b");
  const auto b2 = mesh.publish("e.b");
  const Frame first = next_msg(*peer);
  const Frame second = next_msg(*peer);
  CHECK(first.delivery.stream_seq == a1);
  CHECK(second.delivery.stream_seq == b1);
  REQUIRE(mesh.wait_seen("audit", 4));
  // e.a stays blocked on a1; e.b goes on.
  ack(*peer, second);
  const Frame third = next_msg(*peer);
  CHECK(third.delivery.stream_seq == b2);
  ack(*peer, third);
  ack(*peer, first);
  const Frame fourth = next_msg(*peer);
  CHECK(fourth.delivery.stream_seq == a2);
  ack(*peer, fourth);
  REQUIRE(mesh.wait_settled());
}

TEST_CASE("ordered: a handler that NAKs only its first delivery gets the message again counted 2, then the next",
          "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config(ordered_and_audit("key"), kFastRetry));
  mesh.start_handler("ordered", {"--details", "yes"});  // the test handler, on the C++ client
  mesh.start_handler("audit");
  const std::uint64_t first = mesh.publish("e.one", "nak1@ordered");
  const std::uint64_t second = mesh.publish("e.one", "after");
  REQUIRE(mesh.wait_seen("ordered", 3));
  REQUIRE(mesh.wait_settled());
  const auto seen = mesh.details("ordered");
  REQUIRE(seen.size() == 3);
  CHECK(seen[0].stream_seq == first);
  CHECK(seen[0].deliveries == 1);
  CHECK(seen[1].stream_seq == first);  // jetfan's own retry, before the next of its key
  CHECK(seen[1].deliveries == 2);
  CHECK(seen[1].server_deliveries == 1);  // the server delivered it once
  CHECK(seen[2].stream_seq == second);
  CHECK(seen[2].deliveries == 1);
  CHECK(mesh.seen("ordered").size() == 3);  // acked on its second delivery: nothing more
}
