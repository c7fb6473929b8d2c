// SIGHUP and `jetfan reload`: changing handlers while jetfan runs, under traffic, with nothing lost.

#include <catch2/catch.hpp>

#include <atomic>
#include <csignal>
#include <fstream>
#include <set>
#include <thread>

#include "control.hpp"
#include "mesh.hpp"
#include "raw_peer.hpp"

using namespace jetfan::testing;
using jetfan::proto::Frame;

namespace {

void write_config(const Mesh& mesh, const std::string& text) {
  const std::string path = mesh.dir() + "/jetfan.yaml";
  std::ofstream(path + ".new") << text;
  std::rename((path + ".new").c_str(), path.c_str());
}

// The number after "stream seq " in a reload reply.
std::uint64_t boundary_of(const std::string& reply) {
  const std::string marker = "the last arrival before it: stream seq ";
  const auto at = reply.find(marker);
  REQUIRE(at != std::string::npos);
  return std::stoull(reply.substr(at + marker.size()));
}

}  // namespace

TEST_CASE(
    "reload under traffic adds a handler and removes another: nothing lost, nothing acked early, the new one "
    "gets exactly what arrived after",
    "[integration]") {
  Mesh mesh;
  const std::string before =
      "  - name: stay\n    patterns: [\"#\"]\n"
      "  - name: gone\n    patterns: [\"#\"]\n"
      "  - name: holder\n    patterns: [\"hold.*\"]\n";
  const std::string after =
      "  - name: fresh\n    patterns: [\"k.*\", \"hold.*\"]\n"
      "  - name: holder\n    patterns: [\"hold.*\"]\n"
      "  - name: stay\n    patterns: [\"#\"]\n";
  mesh.start_jetfan(mesh.config(before));
  mesh.start_handler("stay");
  auto& gone = mesh.start_handler("gone", {"--default", "sleep2"});  // slow: it has deliveries in flight
  RawPeer gone_too(mesh.socket_path());  // another instance of gone, which never confirms anything
  gone_too.send("HELLO gone 1\r\n");
  REQUIRE(gone_too.next());
  RawPeer holder(mesh.socket_path());
  holder.send("HELLO holder 1\r\n");
  REQUIRE(holder.next());
  const std::uint64_t held = mesh.publish("hold.one");
  const Frame to_holder = next_msg(holder);  // and holder does not confirm it until the end

  // Continuous traffic from another connection, while the test reloads.
  std::vector<std::uint64_t> published;
  std::atomic<std::size_t> count{0};
  std::atomic<bool> stop{false};
  std::thread traffic([&] {
    jetfan::example::MeshController publisher(mesh.url());
    for (int i = 0; i < 400 && !stop; ++i) {
      published.push_back(publisher.publish("events.k." + std::to_string(i), "x"));
      count = published.size();
    }
  });
  REQUIRE(wait_until([&] { return count >= 120; }));
  write_config(mesh, mesh.config(after));
  const std::string reply = control_request(mesh.control_path(), "RELOAD");
  INFO(reply);
  REQUIRE_THAT(reply, Catch::StartsWith("OK reloaded "));
  CHECK_THAT(reply, Catch::Contains("handler \"gone\" removed: "));
  CHECK_THAT(reply, Catch::Contains("2 instance(s) sent ERR and disconnected"));
  const std::uint64_t boundary = boundary_of(reply);
  mesh.start_handler("fresh");
  traffic.join();
  REQUIRE(count == 400);

  // Everything but the message holder keeps is settled; that one is not acked: holder has not confirmed.
  REQUIRE(wait_until(
      [&] {
        const auto s = mesh.state();
        return s.num_pending == 0 && s.num_ack_pending == 1;
      },
      60s));
  CHECK(mesh.state().ack_floor_stream_seq < held + 1);
  REQUIRE(gone.wait(20s) == 1);  // its connection was closed under it
  for (;;) {  // the other instance had messages unconfirmed: settled all the same, and it was told why
    auto frame = gone_too.next();
    REQUIRE(frame);
    if (frame->kind != Frame::Kind::kErr) continue;
    CHECK(frame->error == "handler \"gone\" was removed from jetfan's config by a reload");
    break;
  }
  CHECK(gone_too.wait_closed());
  holder.send("ACK " + std::to_string(to_holder.delivery.id) + "\r\n");
  REQUIRE(mesh.wait_settled());

  // Nothing lost: stay saw every message once, never redelivered.
  std::multiset<std::uint64_t> stay;
  for (const auto& s : mesh.seen("stay")) {
    CHECK(s.deliveries == 1);
    stay.insert(s.stream_seq);
  }
  std::set<std::uint64_t> all(published.begin(), published.end());
  all.insert(held);
  CHECK(std::set<std::uint64_t>(stay.begin(), stay.end()) == all);
  CHECK(stay.size() == all.size());
  // fresh: exactly the messages that arrived after the reload.
  std::set<std::uint64_t> expected;
  for (const auto seq : published) {
    if (seq > boundary) expected.insert(seq);
  }
  std::set<std::uint64_t> fresh;
  for (const auto& s : mesh.seen("fresh")) fresh.insert(s.stream_seq);
  CHECK(fresh == expected);
  CHECK(boundary > held);
  CHECK(boundary < published.back());
  CHECK_THAT(mesh.jetfan_log(), Catch::Contains("reload: handler \"gone\" removed:"));
}

TEST_CASE("reload changes patterns, max_inflight and ack_timeout of a running handler", "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config("  - name: builder\n    patterns: [\"a.*\"]\n"));
  mesh.start_handler("builder");
  mesh.publish("a.one");
  REQUIRE(mesh.wait_seen("builder", 1));
  write_config(mesh,
               mesh.config("  - name: builder\n    patterns: [\"b.*\"]\n    max_inflight: 3\n    ack_timeout: 300ms\n",
                           "delivery:\n  nak_delay: 50ms\n  nak_delay_max: 100ms\n"));
  mesh.jetfan().signal(SIGHUP);
  REQUIRE(mesh.wait_for_log("reload: reloaded "));
  const std::string log = mesh.jetfan_log();
  CHECK_THAT(log, Catch::Contains("reload: handlers.builder.patterns: [a.*] -> [b.*]"));
  CHECK_THAT(log, Catch::Contains("reload: handlers.builder.max_inflight: 64 -> 3"));
  CHECK_THAT(log, Catch::Contains("reload: handlers.builder.ack_timeout: 30000ms -> 300ms"));
  CHECK_THAT(log, Catch::Contains("reload: delivery.nak_delay: 1000ms -> 50ms"));
  mesh.publish("a.two");                   // no longer the builder's: no recipient
  mesh.publish("b.one", "hang1@builder");  // times out after the new 300ms, then redelivered
  REQUIRE(mesh.wait_seen("builder", 3));
  REQUIRE(mesh.wait_settled());
  const auto seen = mesh.seen("builder");
  CHECK(seen[1].key == "b.one");
  CHECK(seen[2].key == "b.one");
  CHECK(seen[2].deliveries == 2);
  RawPeer peer(mesh.socket_path());
  peer.send("HELLO builder 1\r\n");
  const auto ready = peer.next();
  REQUIRE(ready);
  CHECK(ready->ready.max_unconfirmed ==
        3);  // the instance connected the same way keeps working; new ones get the new limit
}

TEST_CASE("a reload that changes a restart-only key, or a config that does not parse, is refused by name",
          "[integration]") {
  Mesh mesh;
  const std::string handlers = "  - name: builder\n    patterns: [\"a.*\"]\n";
  mesh.start_jetfan(mesh.config(handlers));
  mesh.start_handler("builder");
  std::string config = mesh.config(handlers);
  const auto at = config.find("node1_builder");
  config.replace(at, 13, "node2_builder");
  write_config(mesh, config);
  std::string reply = control_request(mesh.control_path(), "RELOAD");
  CHECK_THAT(reply,
             Catch::StartsWith("REFUSED refused: ") &&
                 Catch::Contains("changes nats.name, consumer.durable, which only a restart of jetfan can change"));
  CHECK_THAT(mesh.jetfan_log(), Catch::Contains("reload: refused: ") && Catch::Contains("consumer.durable"));

  write_config(mesh, mesh.config(handlers) + "  - name: [oops\n");
  Process cli({JETFAN_BIN, "reload", "--control", mesh.control_path()}, mesh.dir() + "/cli.out");
  CHECK(cli.wait(20s) == 78);
  reply = read_file(mesh.dir() + "/cli.out");
  CHECK_THAT(reply, Catch::StartsWith("REFUSED refused: " + mesh.dir() +
                                      "/jetfan.yaml has 1 error(s); the running config stays in force"));
  CHECK_THAT(reply, Catch::Contains("(syntax)"));

  // The running config is still in force.
  mesh.publish("a.one");
  REQUIRE(mesh.wait_seen("builder", 1));
  REQUIRE(mesh.wait_settled());
  const std::string status = control_request(mesh.control_path(), "STATUS");
  CHECK_THAT(status, Catch::Contains("reloads 0 applied, 2 refused"));
}
