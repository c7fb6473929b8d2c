// One reader, and healthy means consuming: a second jetfan on the same durable is seen and named by
// both, a lost connection and a consumer deleted under jetfan fail `jetfan status`, /ready and the
// gauges; against a real nats-server, the real jetfan and real handlers.

#include <catch2/catch.hpp>

#include <csignal>

#include <nlohmann/json.hpp>

#include "control.hpp"
#include "mesh.hpp"
#include "second_jetfan.hpp"

using namespace jetfan::testing;

namespace {

const std::string kBuilder = "  - name: builder\n    patterns: [\"a.>\"]\n";
const std::string kSeen = "another client reads consumer \"node1_builder\" of stream \"EVENTS\"";

}  // namespace

TEST_CASE("two jetfans on one durable each see the other, name it, and fail status and readiness", "[integration]") {
  Mesh mesh;
  const std::string config = mesh.config(kBuilder, "metrics:\n  listen: 127.0.0.1:0\n");
  mesh.start_jetfan(config);
  SecondJetfan second(mesh, config);
  REQUIRE(second.wait_serving());

  // As in the next test: evidence must hold for pull_expires and a poll, and a stall of a busy
  // machine starts that anew (under load each side took over 30 s): a bound, not an expected time.
  REQUIRE(mesh.wait_for_log(kSeen, 90s));
  REQUIRE(wait_until([&] { return second.text().find(kSeen) != std::string::npos; }, 90s));
  CHECK_THAT(mesh.jetfan_log(), Catch::Contains("pull request(s) not jetfan's wait at it"));

  std::string output;
  CHECK(run_jetfan({"status", "--control", mesh.control_path()}, mesh.dir(), output) == 1);
  CHECK_THAT(output, Catch::Contains("PROBLEM: " + kSeen));
  CHECK_THAT(output, Catch::Contains("ready:   no"));
  CHECK(run_jetfan({"status", "--json", "--control", second.control()}, mesh.dir(), output) == 1);
  const auto doc = nlohmann::json::parse(output);
  CHECK(doc["ready"] == false);
  CHECK(doc["nats"]["other_reader"] == true);

  const int port = metrics_port(mesh.jetfan_log());
  REQUIRE(port > 0);
  const auto ready = http_get(port, "/ready");
  CHECK(ready.status == 503);
  CHECK_THAT(ready.body, Catch::Contains(kSeen));
  CHECK(http_get(port, "/live").status == 200);
  const auto metrics = parse_metrics(http_get(port, "/metrics").body);
  CHECK(metrics.at("jetfan_other_reader") == 1);
  CHECK(metrics.at("jetfan_ready") == 0);
  CHECK(metrics.at("jetfan_nats_connected") == 1);

  // Once the other one goes, the verdict clears (after 30 s without new evidence).
  second.process->signal(SIGTERM);
  REQUIRE(second.process->wait(20s) == 0);
  REQUIRE(mesh.wait_for_log("no other reader of consumer \"node1_builder\" seen", 60s));
  CHECK(run_jetfan({"status", "--control", mesh.control_path()}, mesh.dir(), output) == 0);
}

TEST_CASE("deliveries taken by a second reader are counted by the first", "[integration]") {
  Mesh mesh;
  const std::string config = mesh.config(kBuilder);
  mesh.start_jetfan(config);
  mesh.start_handler("builder");
  SecondJetfan second(mesh, config);
  REQUIRE(second.wait_serving());
  // Seen once requests not jetfan's wait at every answer for pull_expires and a poll (7 s); an
  // excuse (a stall of a busy machine, a probe) starts that anew: under load it took over 30 s.
  REQUIRE(mesh.wait_for_log(kSeen, 90s));
  // The second jetfan has no handler: what it takes stays with it, unacked.
  for (int i = 0; i < 40; ++i) mesh.publish("a.n" + std::to_string(i));
  std::string status;
  CHECK(wait_until(
      [&] {
        status = control_request(mesh.control_path(), "STATUS");
        return status.find("of its deliveries went to another client") != std::string::npos;
      },
      30s));
  INFO(status);
  CHECK(mesh.seen("builder").size() < 40);
}

TEST_CASE("with on_other_reader exit, the jetfan that sees another reader drains and exits 78", "[integration]") {
  Mesh mesh;
  std::string config = mesh.config(kBuilder);
  mesh.start_jetfan(config);
  config.insert(config.find("key:"), "  on_other_reader: exit\n");
  SecondJetfan second(mesh, config);
  // A bound on seeing the other reader, as above: under load it took over 40 s.
  REQUIRE(second.process->wait(90s) == 78);
  CHECK_THAT(second.text(), Catch::Contains(kSeen) && Catch::Contains("consumer.on_other_reader is exit"));
}

TEST_CASE("a jetfan restarted after SIGKILL does not take its predecessor's pull requests for a reader",
          "[integration]") {
  Mesh mesh;
  const std::string config = mesh.config(kBuilder);
  mesh.start_jetfan(config);
  mesh.start_handler("builder");
  mesh.publish("a.before");
  REQUIRE(mesh.wait_settled());
  mesh.jetfan().kill_now();
  mesh.start_jetfan(config);
  // nats-server 2.9 may deliver this into a pull request of the dead jetfan (it comes back after
  // AckWait): a delivery that never reaches the new one, which is no other reader.
  mesh.publish("a.after");
  // Its predecessor's requests live at most consumer.pull_expires (5 s); the check looks at every
  // consumer info answer (each 2 s): wait for five answers after they expired.
  const auto started = std::chrono::steady_clock::now();
  REQUIRE(wait_until(
      [&] {
        const auto doc = nlohmann::json::parse(control_request(mesh.control_path(), "STATUS JSON"));
        return doc["uptime_seconds"].get<double>() > 17.0;
      },
      40s));
  INFO(std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started).count());
  CHECK_THAT(mesh.jetfan_log(), !Catch::Contains(kSeen));
  std::string output;
  CHECK(run_jetfan({"status", "--control", mesh.control_path()}, mesh.dir(), output) == 0);
}

TEST_CASE("a lost NATS connection fails status after the grace, and a reconnect heals it", "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config(kBuilder, "metrics:\n  listen: 127.0.0.1:0\n"));
  const int port = metrics_port(mesh.jetfan_log());
  REQUIRE(port > 0);
  CHECK(parse_metrics(http_get(port, "/metrics").body).at("jetfan_nats_connected") == 1);
  mesh.stop_server();
  REQUIRE(mesh.wait_for_log("nats: disconnected"));
  REQUIRE(wait_until([&] { return parse_metrics(http_get(port, "/metrics").body).at("jetfan_nats_connected") == 0; }));
  std::string output;
  REQUIRE(wait_until(
      [&] {
        return run_jetfan({"status", "--control", mesh.control_path()}, mesh.dir(), output) == 1;
      },
      30s));
  CHECK_THAT(output, Catch::Contains("PROBLEM: not connected to NATS for "));
  CHECK(http_get(port, "/ready").status == 503);
  CHECK(http_get(port, "/live").status == 200);
  mesh.start_server();
  REQUIRE(mesh.wait_for_log("nats: reconnected"));
  CHECK(run_jetfan({"status", "--control", mesh.control_path()}, mesh.dir(), output) == 0);
  CHECK(http_get(port, "/ready").status == 200);
}

TEST_CASE("a consumer deleted under a serving jetfan is a problem in status at once", "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config(kBuilder));
  mesh.controller().request("$JS.API.CONSUMER.DELETE.EVENTS.node1_builder", "");
  REQUIRE(mesh.wait_for_log("cannot be read any more", 20s));
  std::string output;
  CHECK(run_jetfan({"status", "--control", mesh.control_path()}, mesh.dir(), output) == 1);
  CHECK_THAT(output, Catch::Contains("PROBLEM: the consumer cannot be read: the server says: consumer not found"));
}
