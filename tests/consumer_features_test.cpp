// Consumers with features nats-server added in 2.11: priority groups that would let two clients read
// (refused at start; pinned_client with one group is pinned_test.cpp's) and pausing (served). Against the real binary
// and the nats-server chosen for the run (JETFAN_NATS_SERVER); on an older server each test says it was skipped (ctest
// counts it as skipped).

#include <catch2/catch.hpp>

#include <iostream>

#include "mesh.hpp"

using namespace jetfan::testing;

namespace {

const std::string kBuilder = "  - name: builder\n    patterns: [\"a.>\"]\n";

// True when the server has priority groups and pausing; otherwise says the test is skipped.
bool server_has_newer_features() {
  const ServerVersion version = nats_server_version();
  if (version.at_least(2, 11)) return true;
  std::cout << "skipped: nats-server " << version.major << "." << version.minor << " (" << nats_server_binary()
            << ") has no priority groups or pausing; set JETFAN_NATS_SERVER to a 2.11 or later one "
               "(scripts/nats_servers.sh fetches it)\n";
  return false;
}

void create_consumer_json(Mesh& mesh, const std::string& extra_config) {
  const std::string answer = mesh.controller().request(
      "$JS.API.CONSUMER.CREATE.EVENTS.node1_builder",
      R"({"stream_name":"EVENTS","config":{"durable_name":"node1_builder","ack_policy":"explicit",)"
      R"("ack_wait":30000000000,"max_ack_pending":1000,)" +
          extra_config + "}}");
  INFO(answer);
  REQUIRE(answer.find("\"error\"") == std::string::npos);
}

}  // namespace

TEST_CASE("a consumer whose priority groups would let two clients read stops jetfan with status 78, naming them",
          "[integration]") {
  if (!server_has_newer_features()) return;
  struct Case {
    std::string groups, why;
  };
  for (const auto& [groups, why] :
       {Case{R"("priority_policy":"overflow","priority_groups":["jobs"])", "policy overflow, groups \"jobs\")"},
        Case{R"("priority_policy":"pinned_client","priority_groups":["jobs","more"])",
             "jetfan reads with one group, so the consumer must have exactly one"}}) {
    INFO(groups);
    Mesh mesh({.create_consumer = false});
    create_consumer_json(mesh, groups + R"(,"priority_timeout":120000000000)");
    auto& jetfan = mesh.start_jetfan(mesh.config(kBuilder), false);
    REQUIRE(jetfan.wait(30s) == 78);
    const std::string log = mesh.jetfan_log();
    CHECK_THAT(log, Catch::Contains("consumer \"node1_builder\" of stream \"EVENTS\" has priority groups"));
    CHECK_THAT(log, Catch::Contains(why));
  }
}

TEST_CASE("a paused consumer is bound with a warning, and its messages flow once it resumes", "[integration]") {
  if (!server_has_newer_features()) return;
  Mesh mesh({.create_consumer = false});
  create_consumer_json(mesh, R"("pause_until":"2100-01-01T00:00:00Z")");
  mesh.start_jetfan(mesh.config(kBuilder));
  CHECK_THAT(mesh.jetfan_log(),
             Catch::Contains("consumer \"node1_builder\" of stream \"EVENTS\" is paused until 2100-01-01"));
  mesh.start_handler("builder");
  mesh.publish("a.b", "one");
  // Resuming: a pause request without a time.
  const std::string answer = mesh.controller().request("$JS.API.CONSUMER.PAUSE.EVENTS.node1_builder", "{}");
  INFO(answer);
  REQUIRE(answer.find("\"paused\":false") != std::string::npos);
  REQUIRE(mesh.wait_seen("builder", 1, 1, 60s));
  CHECK(mesh.seen("builder").front().payload == "one");
  REQUIRE(mesh.wait_settled());
}
