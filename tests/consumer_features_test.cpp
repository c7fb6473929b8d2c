// Consumers with features nats-server added in 2.11: priority groups (refused at start) and pausing
// (served). Against the real binary and the nats-server chosen for the run (JETFAN_NATS_SERVER);
// on an older server each test says it was skipped (ctest counts it as skipped).

#include <catch2/catch.hpp>

#include <cstdio>
#include <iostream>
#include <memory>
#include <regex>

#include "mesh.hpp"

using namespace jetfan::testing;

namespace {

const std::string kBuilder = "  - name: builder\n    patterns: [\"a.>\"]\n";

// The server's version as `nats-server --version` says it, e.g. {2, 15}; {0, 0} if it cannot be read.
std::pair<int, int> server_version() {
  const std::string command = "'" + nats_server_binary() + "' --version 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(command.c_str(), "r"), ::pclose);
  std::string text;
  if (pipe) {
    char buffer[256];
    while (std::fgets(buffer, sizeof buffer, pipe.get()) != nullptr) text += buffer;
  }
  static const std::regex kVersion("v([0-9]+)\\.([0-9]+)");
  std::smatch match;
  if (!std::regex_search(text, match, kVersion)) return {0, 0};
  return {std::stoi(match[1]), std::stoi(match[2])};
}

// True when the server has priority groups and pausing; otherwise says the test is skipped.
bool server_has_newer_features() {
  const auto [major, minor] = server_version();
  if (major > 2 || (major == 2 && minor >= 11)) return true;
  std::cout << "skipped: nats-server " << major << "." << minor << " (" << nats_server_binary()
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

TEST_CASE("a consumer with priority groups stops jetfan with status 78, naming its policy and groups",
          "[integration]") {
  if (!server_has_newer_features()) return;
  for (const std::string policy : {"pinned_client", "overflow"}) {
    INFO(policy);
    Mesh mesh({.create_consumer = false});
    create_consumer_json(
        mesh, R"("priority_policy":")" + policy + R"(","priority_groups":["jobs"],"priority_timeout":120000000000)");
    auto& jetfan = mesh.start_jetfan(mesh.config(kBuilder), false);
    REQUIRE(jetfan.wait(30s) == 78);
    const std::string log = mesh.jetfan_log();
    CHECK_THAT(log, Catch::Contains("consumer \"node1_builder\" of stream \"EVENTS\" has priority groups (policy " +
                                    policy + ", groups \"jobs\")"));
    CHECK_THAT(log, Catch::Contains("priority_policy none"));
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
