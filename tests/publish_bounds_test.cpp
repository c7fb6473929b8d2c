// The bounds of publishing through jetfan (PROTOCOL.md "Publishing"), against the real daemon and a
// real nats-server: a connection with as many publishes waiting as publish.max_in_flight allows is
// read no more until the server answers, and a PUB tied to another connection's delivery is refused
// without touching that delivery.

#include <catch2/catch.hpp>

#include <csignal>
#include <nlohmann/json.hpp>

#include "control.hpp"
#include "mesh.hpp"
#include "raw_peer.hpp"

using namespace jetfan::testing;
using jetfan::proto::Frame;
using namespace std::chrono_literals;

namespace {

std::uint64_t publishes_in_flight(Mesh& mesh) {
  const auto doc = nlohmann::json::parse(control_request(mesh.control_path(), "STATUS JSON"));
  for (const auto& handler : doc["handlers"]) {
    if (handler["name"] == "builder") return handler["publish"]["in_flight"].get<std::uint64_t>();
  }
  return 0;
}

std::string pub(std::uint64_t request) { return "PUB " + std::to_string(request) + " out.x 0 1\r\nx\r\n"; }

}  // namespace

TEST_CASE("a connection with max_in_flight publishes waiting is read no more until the server answers",
          "[integration]") {
  Mesh mesh;
  mesh.controller().create_stream("OUT", {"out.>"});
  mesh.start_jetfan(mesh.config(
      "  - name: builder\n    patterns: [\"#\"]\n    publish:\n      subjects: [\"out.>\"]\n      max_in_flight: 2\n"));
  RawPeer peer(mesh.socket_path());
  hello_v3(peer);
  mesh.signal_server(SIGSTOP);  // takes what jetfan sends, answers nothing
  peer.send(pub(1) + pub(2));
  REQUIRE(wait_until([&] { return publishes_in_flight(mesh) == 2; }));
  // The third PUB and the PING behind it stay in the socket: jetfan does not read the connection.
  peer.send(pub(3) + "PING\r\n");
  const auto nothing = peer.next(500ms);
  CHECK_FALSE(nothing);  // neither an answer nor the PONG
  CHECK(publishes_in_flight(mesh) == 2);
  mesh.signal_server(SIGCONT);
  std::vector<std::uint64_t> stored;
  bool ponged = false;
  while (stored.size() < 3 || !ponged) {
    const auto frame = peer.next(20s);
    REQUIRE(frame);
    if (frame->kind == Frame::Kind::kPong) {
      ponged = true;
      CHECK(!stored.empty());  // read again only once an answer made room
    } else {
      INFO("PUBERR " << frame->publish.code << " " << frame->publish.reason);
      REQUIRE(frame->kind == Frame::Kind::kPubOk);
      stored.push_back(frame->publish.id);
    }
  }
  CHECK(stored == std::vector<std::uint64_t>{1, 2, 3});
  CHECK(mesh.controller().stream_messages("OUT") == 3);
}

TEST_CASE("a PUB tied to a delivery of another connection is answered not-in-flight, and that delivery goes on",
          "[integration]") {
  Mesh mesh;
  mesh.controller().create_stream("OUT", {"out.>"});
  mesh.start_jetfan(
      mesh.config("  - name: builder\n    patterns: [\"#\"]\n    publish:\n"
                  "      subjects: [\"out.>\"]\n"));
  RawPeer holder(mesh.socket_path());
  hello_v3(holder);
  mesh.publish("a.b", "in");
  const Frame msg = next_msg(holder);
  RawPeer other(mesh.socket_path());  // a second instance of the same handler
  hello_v3(other);
  other.send("PUB 1 out.x 0 1 " + std::to_string(msg.delivery.id) + " 0\r\nx\r\n");
  const auto refused = other.next();
  REQUIRE(refused);
  REQUIRE(refused->kind == Frame::Kind::kPubErr);
  CHECK(refused->publish.code == "not-in-flight");
  holder.send("PUB 1 out.x 0 1 " + std::to_string(msg.delivery.id) + " 0\r\nx\r\nACK " +
              std::to_string(msg.delivery.id) + "\r\n");
  const auto stored = holder.next();
  REQUIRE(stored);
  CHECK(stored->kind == Frame::Kind::kPubOk);
  CHECK(mesh.wait_settled());
  CHECK(mesh.controller().stream_messages("OUT") == 1);
}
