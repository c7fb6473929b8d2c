// The confirmation ledger (config `ledger:`, docs/OPERATING.md "Ledger") against a real nats-server
// and the real jetfan: what a handler confirmed stays confirmed across a SIGKILL, a bucket that is
// missing stops serve and `check --connect` with the command that makes it, and a bucket gone
// while serving costs nothing but its records.

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "control.hpp"
#include "mesh.hpp"

using namespace jetfan::testing;
using namespace std::chrono_literals;

namespace {

// X is declared and never connected before the restart: what Y confirms stays held for it.
const std::string kHandlers =
    "  - name: x\n    patterns: [\"e.*\"]\n"
    "  - name: y\n    patterns: [\"e.*\"]\n";
const std::string kLedger = "ledger:\n  bucket: confirmations\n  interval: 200ms\n";

nlohmann::json status_json(Mesh& mesh) {
  return nlohmann::json::parse(control_request(mesh.control_path(), "STATUS JSON"));
}

}  // namespace

TEST_CASE("ledger: messages Y confirmed before a SIGKILL go after the restart to X alone", "[integration]") {
  constexpr std::size_t kMessages = 1000;
  Mesh mesh({.ack_wait = 2s, .max_ack_pending = 2000});
  mesh.controller().create_key_value("confirmations", 1h);
  // Settled records leave delete markers until the TTL: the read at start passes over them.
  constexpr std::size_t kMarkers = 3000;
  for (std::size_t i = 0; i < kMarkers; ++i) {
    mesh.controller().publish("$KV.confirmations.node1_builder." + std::to_string(1'000'000 + i), "",
                              {{"KV-Operation", "DEL"}});
  }
  const std::string config = mesh.config(kHandlers, kLedger);
  mesh.start_jetfan(config);
  mesh.start_handler("y");
  for (std::size_t i = 0; i < kMessages; ++i) mesh.publish("e." + std::to_string(i % 7));
  REQUIRE(mesh.wait_seen("y", kMessages, 1, 60s));
  // Every one of them is recorded once its interval has passed: a record per message in the bucket.
  REQUIRE(
      wait_until([&] { return mesh.controller().stream_messages("KV_confirmations") == kMarkers + kMessages; }, 30s));
  const auto before = status_json(mesh)["ledger"];
  INFO(before.dump());
  CHECK(before["puts"] == kMessages);
  CHECK(before["not_written"].is_null());

  mesh.jetfan().kill_now();
  mesh.start_jetfan(config);
  CHECK(mesh.wait_for_log("ledger: read 1000 record(s) from bucket \"confirmations\""));
  mesh.start_handler("x");
  REQUIRE(mesh.wait_seen("x", kMessages, 1, 60s));
  REQUIRE(mesh.wait_settled(60s));
  // Everything came again after the kill and was acked at the server: had any gone to Y again, it
  // would be among what Y saw before the consumer settled.
  CHECK(mesh.seen("y").size() == kMessages);
  CHECK(mesh.seen("x").size() == kMessages);
  const auto after = status_json(mesh);
  INFO(after.dump());
  CHECK(after["messages"]["skipped_confirmed"] == kMessages);
  CHECK(after["ledger"]["loaded"] == kMessages);
  // Each record is deleted once its message is acked at the server.
  CHECK(wait_until([&] { return status_json(mesh)["ledger"]["deletes"] == kMessages; }, 30s));
}

TEST_CASE("ledger: a missing bucket stops serve and check --connect, naming the command that makes it",
          "[integration]") {
  Mesh mesh;
  const std::string config = mesh.config(kHandlers, kLedger);
  auto& jetfan = mesh.start_jetfan(config, false);
  const auto status = jetfan.wait(20s);
  REQUIRE(status);
  CHECK(*status != 0);
  CHECK_THAT(mesh.jetfan_log(), Catch::Contains("no key-value bucket \"confirmations\"") &&
                                    Catch::Contains("nats kv add confirmations --history 1"));
  std::string output;
  CHECK(run_jetfan({"check", "--connect", "--config", mesh.dir() + "/jetfan.yaml"}, mesh.dir(), output) != 0);
  CHECK_THAT(output, Catch::Contains("FAIL") && Catch::Contains("no key-value bucket \"confirmations\""));

  mesh.controller().create_key_value("confirmations", 1h);
  CHECK(run_jetfan({"check", "--connect", "--config", mesh.dir() + "/jetfan.yaml"}, mesh.dir(), output) == 0);
  CHECK_THAT(output, Catch::Contains("ok") && Catch::Contains("ledger: bucket \"confirmations\""));
}

TEST_CASE("ledger: a bucket deleted while serving costs its records, never a message", "[integration]") {
  Mesh mesh;
  mesh.controller().create_key_value("confirmations", 1h);
  mesh.start_jetfan(mesh.config(kHandlers, kLedger));
  mesh.start_handler("y");
  mesh.controller().delete_stream("KV_confirmations");
  for (int i = 0; i < 20; ++i) mesh.publish("e.1");
  REQUIRE(mesh.wait_seen("y", 20));
  // Held for X past the interval, each record is tried and refused: status says so.
  REQUIRE(wait_until([&] { return status_json(mesh)["ledger"]["failed"].get<int>() >= 20; }, 30s));
  const auto doc = status_json(mesh);
  INFO(doc.dump());
  CHECK_THAT(doc["ledger"]["not_written"].get<std::string>(), Catch::Contains("writes failing for"));
  CHECK(doc["ready"] == true);  // the ledger is off the critical path
  CHECK(mesh.wait_for_log("ledger: the record of stream seq"));
  mesh.start_handler("x");
  REQUIRE(mesh.wait_seen("x", 20));
  REQUIRE(mesh.wait_settled());
  CHECK(mesh.seen("y").size() == 20);
}
