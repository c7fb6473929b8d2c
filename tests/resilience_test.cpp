// Shutdown (the drain) and the server restarting mid-stream, for real.

#include <catch2/catch.hpp>

#include <csignal>
#include <set>

#include "mesh.hpp"
#include "raw_peer.hpp"

using namespace jetfan::testing;

namespace {
const std::string kBuilderAndAudit =
    "  - name: builder\n    patterns: [\"#\"]\n  - name: audit\n    patterns: [\"a.*\"]\n";
}

TEST_CASE("after nats-server restarts mid-stream, delivery resumes by itself and nothing is lost", "[integration]") {
  Mesh mesh;
  // A long pull expiry: resuming must not wait for it.
  std::string config = mesh.config("  - name: builder\n    patterns: [\"#\"]\n");
  config.insert(config.find("key:"), "  pull_expires: 5m\n  idle_heartbeat: 30s\n");
  mesh.start_jetfan(config);
  mesh.start_handler("builder");
  for (int i = 0; i < 20; ++i) mesh.publish("a.b", "before-" + std::to_string(i));
  REQUIRE(mesh.wait_seen("builder", 20));
  REQUIRE(mesh.wait_settled());

  mesh.stop_server();
  REQUIRE(mesh.wait_for_log("disconnected"));
  mesh.start_server();
  REQUIRE(mesh.wait_for_log("reconnected"));
  for (int i = 0; i < 20; ++i) mesh.publish("a.b", "after-" + std::to_string(i));
  REQUIRE(mesh.wait_seen("builder", 40, 1, 20s));
  REQUIRE(mesh.wait_settled());
  std::set<std::string> payloads;
  for (const auto& s : mesh.seen("builder")) payloads.insert(s.payload);
  CHECK(payloads.size() == 40);
}

TEST_CASE("messages held across a server restart are still delivered and settled", "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config(kBuilderAndAudit));
  mesh.start_handler("builder");
  const auto seq = mesh.publish("a.b", "audit is away");  // held for audit
  REQUIRE(mesh.wait_seen("builder", 1));
  mesh.stop_server();
  mesh.start_server();
  REQUIRE(mesh.wait_for_log("reconnected"));
  mesh.start_handler("audit");
  REQUIRE(mesh.wait_seen("audit", 1));
  REQUIRE(mesh.wait_settled());
  CHECK(mesh.seen("audit")[0].stream_seq == seq);
}

TEST_CASE("SIGTERM lets deliveries in flight finish, hands the rest back at once, exits 0", "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config(kBuilderAndAudit));
  mesh.start_handler("builder");
  const auto held = mesh.publish("a.b", "x");  // builder acks; audit is away: held
  mesh.publish("z.z", "sleep1000@builder");    // builder only: in flight for a second
  REQUIRE(mesh.wait_seen("builder", 2));
  mesh.jetfan().signal(SIGTERM);
  REQUIRE(mesh.jetfan().wait(20s) == 0);
  const auto log = mesh.jetfan_log();
  CHECK_THAT(log, Catch::Contains("draining"));
  CHECK_THAT(log, Catch::Contains("2 messages arrived, 1 acked, 1 nak'd"));  // z.z finished; a.b handed back once
  CHECK(mesh.seen("builder").size() == 2);

  // The next jetfan gets only what is owed, at once (no delay on the nak).
  mesh.start_jetfan(mesh.config(kBuilderAndAudit));
  mesh.start_handler("audit");
  mesh.start_handler("builder");
  REQUIRE(mesh.wait_seen("audit", 1));
  REQUIRE(mesh.wait_settled());
  CHECK(mesh.seen("audit")[0].stream_seq == held);
  CHECK(mesh.seen("builder", 2).size() == 1);  // redelivered a.b: jetfan's memory went with it
}

TEST_CASE("deliveries still in flight at drain_timeout are handed back, and jetfan exits 0", "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config("  - name: builder\n    patterns: [\"#\"]\n", "delivery:\n  drain_timeout: 300ms\n"));
  mesh.start_handler("builder", {"--default", "hang"});
  const auto seq = mesh.publish("a.b");
  REQUIRE(mesh.wait_seen("builder", 1));
  mesh.jetfan().signal(SIGTERM);
  REQUIRE(mesh.jetfan().wait(20s) == 0);
  CHECK_THAT(mesh.jetfan_log(), Catch::Contains("drain_timeout reached with 1 deliveries still in flight"));
  // Handed back with no delay: the server has it ready for the next reader.
  mesh.start_jetfan(mesh.config("  - name: builder\n    patterns: [\"#\"]\n"));
  mesh.start_handler("builder");
  REQUIRE(mesh.wait_seen("builder", 1, 2));
  REQUIRE(mesh.wait_settled());
  CHECK(mesh.seen("builder", 2)[0].stream_seq == seq);
}

TEST_CASE("a handler's ACK sent just before it hangs up counts, even while jetfan is writing to it", "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config("  - name: builder\n    patterns: [\"#\"]\n    max_inflight: 1000\n",
                                "delivery:\n  nak_delay: 50ms\n  nak_delay_max: 200ms\n"));
  // Far more than a Unix socket buffers: jetfan is still writing when the handler hangs up, so
  // its write fails while the handler's ACK waits unread in jetfan's receive buffer.
  const std::string big(256 * 1024, 'x');
  constexpr int kCount = 8;
  for (int i = 0; i < kCount; ++i) mesh.publish("a.b", big);
  std::uint64_t confirmed_seq = 0;
  {
    RawPeer first(mesh.socket_path());
    first.send("HELLO builder 1\r\n");
    for (;;) {
      auto frame = first.next();
      REQUIRE(frame);
      if (frame->kind != jetfan::proto::Frame::Kind::kMsg) continue;
      confirmed_seq = frame->delivery.stream_seq;
      first.send("ACK " + std::to_string(frame->delivery.id) + "\r\n");
      break;
    }
  }  // closed with jetfan's other deliveries unread
  RawPeer second(mesh.socket_path());
  second.send("HELLO builder 1\r\n");
  std::set<std::uint64_t> again;
  while (again.size() < kCount - 1) {
    auto frame = second.next();
    REQUIRE(frame);
    if (frame->kind != jetfan::proto::Frame::Kind::kMsg) continue;
    again.insert(frame->delivery.stream_seq);
    second.send("ACK " + std::to_string(frame->delivery.id) + "\r\n");
  }
  CHECK(again.count(confirmed_seq) == 0);
  REQUIRE(mesh.wait_settled());
}

TEST_CASE("handlers that connect while the server is away are still heard once jetfan is back", "[integration]") {
  Mesh mesh;
  // A long ack_timeout: a confirmation jetfan does not read is not made good by a redelivery in time.
  mesh.start_jetfan(mesh.config("  - name: builder\n    patterns: [\"#\"]\n    ack_timeout: 5m\n"));
  mesh.stop_server();
  REQUIRE(mesh.wait_for_log("disconnected"));
  // cnats has closed its socket: the next connections jetfan accepts may get its descriptor's number.
  constexpr int kInstances = 3;
  for (int i = 0; i < kInstances; ++i) mesh.start_handler("builder");
  mesh.start_server();
  REQUIRE(mesh.wait_for_log("reconnected"));
  constexpr int kCount = 30;
  for (int i = 0; i < kCount; ++i) mesh.publish("a.b", std::to_string(i));
  // Every instance's ACKs are read, whichever socket number it got.
  REQUIRE(mesh.wait_settled());
  std::size_t seen = 0;
  for (int i = 1; i <= kInstances; ++i) seen += mesh.seen("builder", i).size();
  CHECK(seen == kCount);
}
