// Ordered handlers across restarts, against a real nats-server and the real jetfan: what the killed
// jetfan left unacked comes back after AckWait, mixed with newer messages of the same keys, and the
// handler still gets each key in stream order, one at a time. The consumer's AckWait is short so
// that the server redelivers within seconds.

#include <catch2/catch.hpp>

#include <map>
#include <memory>
#include <set>

#include "mesh.hpp"
#include "raw_peer.hpp"

using namespace jetfan::testing;
using jetfan::proto::Frame;

namespace {

const std::string kOrdered = "  - name: ordered\n    patterns: [\"e.*\"]\n    max_inflight: 16\n    order_by: key\n";
const std::string kFastRetry = "delivery:\n  nak_delay: 50ms\n  nak_delay_max: 200ms\n";

std::unique_ptr<RawPeer> hello(const Mesh& mesh) {
  auto peer = std::make_unique<RawPeer>(mesh.socket_path());
  peer->send("HELLO ordered 1\r\n");
  auto ready = peer->next();
  REQUIRE(ready);
  REQUIRE(ready->kind == Frame::Kind::kReady);
  return peer;
}

// Takes `count` messages from the peer in rounds: waits for one, takes whatever else jetfan had sent
// by then (sync), checks that no two of one key are among them, and only then ACKs the round. The
// stream sequences seen, per key, in the order they came.
std::map<std::string, std::vector<std::uint64_t>> take_in_rounds(RawPeer& peer, std::size_t count) {
  std::map<std::string, std::vector<std::uint64_t>> by_key;
  std::size_t taken = 0;
  while (taken < count) {
    std::vector<Frame> round{next_msg(peer, std::chrono::seconds(20))};
    REQUIRE(peer.sync());
    while (auto frame = peer.next(std::chrono::milliseconds(0))) {
      if (frame->kind == Frame::Kind::kMsg) round.push_back(*frame);
    }
    std::set<std::string> keys;
    for (const Frame& msg : round) {
      INFO("stream seq " << msg.delivery.stream_seq << " of key " << msg.delivery.key);
      CHECK(keys.insert(msg.delivery.key).second);  // never two of one key at once
      by_key[msg.delivery.key].push_back(msg.delivery.stream_seq);
    }
    for (const Frame& msg : round) peer.send("ACK " + std::to_string(msg.delivery.id) + "\r\n");
    taken += round.size();
  }
  return by_key;
}

}  // namespace

TEST_CASE("ordered restart: after kill -9 with three keys in flight, each key's old message comes before its new",
          "[integration]") {
  Mesh mesh({.ack_wait = std::chrono::milliseconds(2000)});
  const std::string config = mesh.config(kOrdered, kFastRetry);
  mesh.start_jetfan(config);
  std::map<std::string, std::uint64_t> old_seq;
  {
    auto peer = hello(mesh);
    for (const std::string key : {"e.a", "e.b", "e.c"}) old_seq[key] = mesh.publish(key, "old");
    for (int i = 0; i < 3; ++i) next_msg(*peer);  // delivered, never confirmed
    mesh.jetfan().kill_now();
  }
  std::map<std::string, std::uint64_t> new_seq;
  for (const std::string key : {"e.a", "e.b", "e.c"}) new_seq[key] = mesh.publish(key, "new");

  mesh.start_jetfan(config);
  auto peer = hello(mesh);
  const auto by_key = take_in_rounds(*peer, 6);
  for (const std::string key : {"e.a", "e.b", "e.c"}) {
    INFO("key " << key);
    REQUIRE(by_key.count(key));
    CHECK(by_key.at(key) == std::vector<std::uint64_t>{old_seq[key], new_seq[key]});
  }
  REQUIRE(mesh.wait_settled());
  CHECK(mesh.wait_for_log("may still be unacked"));
}

TEST_CASE("ordered restart: after a nats-server restart, newer messages of keys in flight wait for them",
          "[integration]") {
  Mesh mesh({.ack_wait = std::chrono::milliseconds(2000)});
  mesh.start_jetfan(mesh.config(kOrdered, kFastRetry));
  auto peer = hello(mesh);
  std::vector<Frame> in_flight;
  in_flight.reserve(3);
  std::map<std::string, std::uint64_t> old_seq;
  for (const std::string key : {"e.a", "e.b", "e.c"}) old_seq[key] = mesh.publish(key, "old");
  for (int i = 0; i < 3; ++i) in_flight.push_back(next_msg(*peer));
  mesh.stop_server();
  mesh.start_server();
  std::map<std::string, std::uint64_t> new_seq;
  for (const std::string key : {"e.a", "e.b", "e.c"}) new_seq[key] = mesh.publish(key, "new");
  // jetfan holds the new ones (the server counts all six as awaiting an ack) and gives none out.
  REQUIRE(wait_until([&] { return mesh.state().num_ack_pending == 6; }, std::chrono::seconds(20)));
  REQUIRE(peer->sync());
  while (auto frame = peer->next(std::chrono::milliseconds(0))) CHECK(frame->kind != Frame::Kind::kMsg);
  for (const Frame& msg : in_flight) peer->send("ACK " + std::to_string(msg.delivery.id) + "\r\n");
  const auto by_key = take_in_rounds(*peer, 3);
  for (const std::string key : {"e.a", "e.b", "e.c"}) {
    INFO("key " << key);
    REQUIRE(by_key.count(key));
    CHECK(by_key.at(key) == std::vector<std::uint64_t>{new_seq[key]});
  }
  REQUIRE(mesh.wait_settled());
}
