// Prometheus metrics and the probes, scraped over HTTP from the real jetfan while known traffic runs.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <fstream>

#include "control.hpp"
#include "mesh.hpp"
#include "raw_peer.hpp"

// AddressSanitizer (gcc says so one way, clang the other).
#if defined(__SANITIZE_ADDRESS__)
#define JETFAN_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define JETFAN_TEST_ASAN 1
#endif
#endif
#ifndef JETFAN_TEST_ASAN
#define JETFAN_TEST_ASAN 0
#endif

using namespace jetfan::testing;

namespace {

const std::string kMetrics = "metrics:\n  listen: \"127.0.0.1:0\"\n";
const std::string kFastRetry = "delivery:\n  nak_delay: 50ms\n  nak_delay_max: 200ms\n";
const std::string kHandlers =
    "  - name: builder\n    patterns: [\"a.*\"]\n    ack_timeout: 300ms\n"
    "  - name: audit\n    patterns: [\"a.ok\"]\n";

std::map<std::string, double> scrape(int port) {
  const auto reply = http_get(port, "/metrics");
  REQUIRE(reply.status == 200);
  return parse_metrics(reply.body);
}

// value(after) - value(before) for one series; a series absent before counts as 0.
double moved(const std::map<std::string, double>& before, const std::map<std::string, double>& after,
             const std::string& series) {
  const auto a = after.find(series);
  REQUIRE(a != after.end());
  const auto b = before.find(series);
  return a->second - (b == before.end() ? 0 : b->second);
}

}  // namespace

TEST_CASE("metrics count the writes and reads of a handler's sockets and every byte each way", "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config("  - name: builder\n    patterns: [\"a.*\"]\n", kMetrics));
  const int port = metrics_port(mesh.jetfan_log());
  REQUIRE(port > 0);
  RawPeer builder(mesh.socket_path());
  builder.send("HELLO builder 1\r\n");  // before admission: not counted
  const std::size_t hello_bytes = builder.sent_bytes();
  REQUIRE(builder.next()->kind == jetfan::proto::Frame::Kind::kReady);
  REQUIRE(builder.sync());
  const auto before = scrape(port);
  const std::size_t received_before = builder.received_bytes();
  const std::size_t sent_before = builder.sent_bytes();
  CHECK(before.at("jetfan_handler_socket_read_bytes_total{handler=\"builder\"}") == sent_before - hello_bytes);
  CHECK(before.at("jetfan_handler_socket_written_bytes_total{handler=\"builder\"}") == received_before);

  for (int i = 0; i < 5; ++i) mesh.publish("a.x");
  std::string acks;
  for (int i = 0; i < 5; ++i) acks += "ACK " + std::to_string(next_msg(builder).delivery.id) + "\r\n";
  builder.send(acks);  // five confirmations in one write
  REQUIRE(builder.sync());
  REQUIRE(mesh.wait_settled());
  const auto after = scrape(port);
  const std::string of = "{handler=\"builder\"}";
  CHECK(moved(before, after, "jetfan_handler_socket_written_bytes_total" + of) ==
        builder.received_bytes() - received_before);
  CHECK(moved(before, after, "jetfan_handler_socket_read_bytes_total" + of) == builder.sent_bytes() - sent_before);
  // Five MSGs and a PONG in one to six writes; the ACKs and the PING in one or two reads.
  CHECK(moved(before, after, "jetfan_handler_socket_writes_total" + of) >= 1);
  CHECK(moved(before, after, "jetfan_handler_socket_writes_total" + of) <= 6);
  CHECK(moved(before, after, "jetfan_handler_socket_reads_total" + of) >= 1);
  CHECK(moved(before, after, "jetfan_handler_socket_reads_total" + of) <= 2);
  CHECK(moved(before, after, "jetfan_handler_acks_total" + of) == 5);
}

TEST_CASE("metrics move exactly as the traffic says: acks, a NAK, a TERM, a timeout, unrouted keys", "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config(kHandlers, kFastRetry + kMetrics));
  const int port = metrics_port(mesh.jetfan_log());
  REQUIRE(port > 0);
  mesh.start_handler("builder");
  mesh.start_handler("audit");
  const auto before = scrape(port);
  CHECK(before.at("jetfan_handler_connections{handler=\"builder\"}") == 1);
  CHECK(before.at("jetfan_ready") == 1);

  // A delivery that hangs: while it does, the gauges show it.
  mesh.publish("a.slow", "hang1@builder");
  REQUIRE(mesh.wait_seen("builder", 1));
  const auto hanging = scrape(port);
  CHECK(hanging.at("jetfan_handler_in_flight{handler=\"builder\"}") == 1);
  CHECK(hanging.at("jetfan_messages_held") == 1);
  CHECK(hanging.at("jetfan_messages_held_bytes") >= 20);  // "hang1@builder": its body at least, and headers
  CHECK(hanging.at("jetfan_messages_held_limit") > 0);
  CHECK(hanging.at("jetfan_messages_held_limit_bytes") == 32 << 20);  // the default
  CHECK(hanging.at("jetfan_deliveries_in_flight") == 1);
  REQUIRE(mesh.wait_seen("builder", 2));  // timed out after 300ms and redelivered
  REQUIRE(mesh.wait_settled());

  mesh.publish("a.ok");  // builder and audit ack
  mesh.publish("a.ok");
  mesh.publish("a.ok", "nak1@builder");           // audit acks; builder naks once: the redelivery is builder's alone
  mesh.publish("a.term", "term@builder");         // terminated
  mesh.publish("zzz.nobody");                     // no recipient: acked
  mesh.controller().publish("other.thing", "x");  // no key prefix: terminated
  REQUIRE(mesh.wait_seen("builder", 7));
  REQUIRE(mesh.wait_settled());
  const auto after = scrape(port);

  CHECK(moved(before, after, "jetfan_messages_arrived_total") == 9);
  CHECK(moved(before, after, "jetfan_messages_redelivered_total") == 2);
  CHECK(moved(before, after, "jetfan_messages_acked_total") == 5);
  CHECK(moved(before, after, "jetfan_messages_nakked_total") == 2);
  CHECK(moved(before, after, "jetfan_messages_terminated_total") == 1);
  CHECK(moved(before, after, "jetfan_messages_no_recipient_total") == 1);
  CHECK(moved(before, after, "jetfan_messages_unroutable_total") == 1);
  CHECK(moved(before, after, "jetfan_handler_deliveries_total{handler=\"builder\"}") == 7);
  CHECK(moved(before, after, "jetfan_handler_acks_total{handler=\"builder\"}") == 4);
  CHECK(moved(before, after, "jetfan_handler_terms_total{handler=\"builder\"}") == 1);
  CHECK(moved(before, after, "jetfan_handler_delivery_failures_total{handler=\"builder\",cause=\"nak\"}") == 1);
  CHECK(moved(before, after, "jetfan_handler_delivery_failures_total{handler=\"builder\",cause=\"timeout\"}") == 1);
  CHECK(moved(before, after, "jetfan_handler_delivery_failures_total{handler=\"builder\",cause=\"disconnect\"}") == 0);
  CHECK(moved(before, after, "jetfan_handler_confirmation_latency_seconds_count{handler=\"builder\"}") == 6);
  CHECK(moved(before, after, "jetfan_handler_confirmation_latency_seconds_bucket{handler=\"builder\",le=\"+Inf\"}") ==
        6);
  CHECK(moved(before, after, "jetfan_handler_deliveries_total{handler=\"audit\"}") == 3);
  CHECK(moved(before, after, "jetfan_handler_acks_total{handler=\"audit\"}") == 3);
  CHECK(moved(before, after, "jetfan_deliveries_skipped_total") == 1);  // audit had confirmed it
  CHECK(moved(before, after, "jetfan_message_publish_age_seconds_count") == 9);
  CHECK(after.at("jetfan_messages_held") == 0);
  CHECK(after.at("jetfan_messages_held_bytes") == 0);  // every body freed once settled
  CHECK(moved(before, after, "jetfan_messages_handed_back_for_room_total") == 0);
  CHECK(after.at("jetfan_deliveries_in_flight") == 0);
  CHECK(after.at("jetfan_handler_in_flight{handler=\"builder\"}") == 0);
  CHECK(after.at("jetfan_handler_oldest_unconfirmed_age_seconds{handler=\"builder\"}") == 0);
  CHECK(after.at("jetfan_pull_requests_outstanding") >= 1);
  // The default pull batch: a quarter of max_held, at most 4096 (this config sets neither).
  CHECK(after.at("jetfan_pull_batch") ==
        std::clamp(std::floor(after.at("jetfan_messages_held_limit") / 4), 1.0, 4096.0));
  CHECK(after.at("process_resident_memory_bytes") > 0);
#if !JETFAN_TEST_ASAN  // under AddressSanitizer jetfan's memory is not glibc's heap
  CHECK(after.at("jetfan_heap_in_use_bytes") > 0);
#endif
  CHECK(after.at("process_open_fds") > 3);
  CHECK(after.at("process_max_fds") >= after.at("process_open_fds"));
  CHECK(after.at("process_cpu_seconds_total") > 0);
  CHECK(after.at("process_start_time_seconds") > 1.6e9);
  const auto build = std::find_if(after.begin(), after.end(),
                                  [](const auto& series) { return series.first.rfind("jetfan_build_info{", 0) == 0; });
  REQUIRE(build != after.end());
  CHECK_THAT(build->first, Catch::Contains("cnats=\"3."));
  CHECK(build->second == 1);

  // The same text passes Prometheus's own linter, where it is installed.
  if (std::system("command -v promtool > /dev/null 2>&1") != 0) {
    WARN("promtool not found (Debian package prometheus; scripts/deps.sh installs it): check skipped");
    return;
  }
  const std::string file = mesh.dir() + "/metrics.txt";
  std::ofstream(file) << http_get(port, "/metrics").body;
  const std::string out = mesh.dir() + "/promtool.out";
  const int status = std::system(("promtool check metrics < " + file + " > " + out + " 2>&1").c_str());
  INFO(read_file(out));
  CHECK(status == 0);
}

TEST_CASE("the server's view of the consumer's lag is scraped: pending and awaiting ack", "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config(kHandlers, kMetrics));
  const int port = metrics_port(mesh.jetfan_log());
  REQUIRE(port > 0);
  // No handler yet: jetfan holds what arrives, so the server awaits acks for it.
  for (int i = 0; i < 3; ++i) mesh.publish("a.ok");
  const auto wait_for = [&](const std::string& series, double value) {
    std::map<std::string, double> last;
    const bool seen = wait_until(
        [&] {
          last = scrape(port);
          const auto found = last.find(series);
          return found != last.end() && found->second == value;
        },
        30s);
    INFO(series << " never became " << value << "; last " << (last.count(series) ? last.at(series) : -1));
    CHECK(seen);
    return last;
  };
  const auto held = wait_for("jetfan_consumer_num_ack_pending", 3);
  CHECK(held.at("jetfan_consumer_num_pending") == 0);
  CHECK(held.at("jetfan_consumer_info_age_seconds") < 60);
  mesh.start_handler("builder");
  mesh.start_handler("audit");
  REQUIRE(mesh.wait_settled());
  wait_for("jetfan_consumer_num_ack_pending", 0);
}

TEST_CASE("/live answers from the start, /ready only while bound and serving, not while draining", "[integration]") {
  Mesh mesh;
  mesh.stop_server();  // the stream and the consumer stay in its storage, there when it comes back
  mesh.start_jetfan(mesh.config("  - name: builder\n    patterns: [\"#\"]\n", kMetrics), false);
  REQUIRE(wait_until([&] { return metrics_port(mesh.jetfan_log()) > 0; }));
  const int port = metrics_port(mesh.jetfan_log());
  CHECK(http_get(port, "/live").status == 200);
  const auto starting = http_get(port, "/ready");
  CHECK(starting.status == 503);
  CHECK_THAT(starting.body, Catch::Contains("not bound to the consumer yet"));
  CHECK(http_get(port, "/nothing").status == 404);

  mesh.start_server();
  REQUIRE(mesh.wait_for_log("serving consumer"));
  CHECK(http_get(port, "/ready").status == 200);

  // Draining: a delivery in flight keeps jetfan alive, and not ready.
  RawPeer peer(mesh.socket_path());
  peer.send("HELLO builder 1\r\n");
  REQUIRE(peer.next());
  mesh.publish("a.b");
  auto msg = peer.next();
  REQUIRE(msg);
  mesh.jetfan().signal(SIGTERM);
  REQUIRE(mesh.wait_for_log("draining:"));
  CHECK(http_get(port, "/ready").status == 503);
  CHECK(http_get(port, "/live").status == 200);
  peer.send("ACK " + std::to_string(msg->delivery.id) + "\r\n");
  CHECK(mesh.jetfan().wait(20s) == 0);
}

TEST_CASE("a message for eight handlers is held once: memory grows by its size, not eight times", "[integration]") {
  Mesh mesh;
  std::string handlers;
  for (int i = 0; i < 8; ++i) handlers += "  - name: h" + std::to_string(i) + "\n    patterns: [\"#\"]\n";
  mesh.start_jetfan(mesh.config(handlers, kMetrics));
  const int port = metrics_port(mesh.jetfan_log());
  REQUIRE(port > 0);
  // Eight handlers that never read: what jetfan sends them stays in its output queues.
  std::vector<std::unique_ptr<RawPeer>> peers;
  for (int i = 0; i < 8; ++i) {
    peers.push_back(std::make_unique<RawPeer>(mesh.socket_path()));
    peers.back()->send("HELLO h" + std::to_string(i) + " 1\r\n");
  }
  REQUIRE(wait_until([&] { return scrape(port).at("jetfan_handler_connections{handler=\"h7\"}") == 1; }));
  const double before = scrape(port).at("process_resident_memory_bytes");
  for (int m = 0; m < 4; ++m) mesh.publish("a.big", std::string(900 * 1024, 'x'));  // 3.5 MiB in all
  REQUIRE(wait_until([&] { return scrape(port).at("jetfan_deliveries_in_flight") == 32; }));
  // All 32 deliveries are queued for peers that read nothing. Written from one buffer per message,
  // they cost about the messages' size once; a copy per recipient would be eight times that, 28 MiB.
  const auto now = scrape(port);
  CHECK(now.at("process_resident_memory_bytes") - before < 12.0 * (1 << 20));
  CHECK(now.at("jetfan_messages_held_bytes") < 4.0 * (1 << 20));
}
