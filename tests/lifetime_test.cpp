// Stopping jetfan at unlucky moments: while messages are being delivered, while the connection to
// the server is down and being re-established. Run a hundred times; under AddressSanitizer (the
// test command's second pass) a use of a callback target after it went would end the process with
// an error, and so the test.

#include <catch2/catch.hpp>

#include <csignal>
#include <random>
#include <set>

#include "mesh.hpp"

using namespace jetfan::testing;

TEST_CASE("stopping jetfan while messages and reconnects arrive, a hundred times, exits cleanly and loses nothing",
          "[integration][slow]") {
  Mesh mesh({.ack_wait = 2s});
  const std::string config = mesh.config("  - name: builder\n    patterns: [\"#\"]\n",
                                         "delivery:\n  drain_timeout: 2s\n", "  reconnect_wait: 50ms\n");
  std::mt19937 random(Catch::rngSeed());
  std::uint64_t published = 0;
  for (int round = 0; round < 100; ++round) {
    INFO("round " << round);
    auto& jetfan = mesh.start_jetfan(config);
    mesh.start_handler("builder");
    for (int i = 0; i < 20; ++i) mesh.publish("a.b", "r" + std::to_string(round) + "-" + std::to_string(i));
    published += 20;
    switch (random() % 3) {
      case 0:
        break;  // stop while the messages are arriving
      case 1:   // stop while disconnected
        mesh.stop_server();
        mesh.start_server();
        break;
      case 2:  // stop once the reconnect is under way or done
        mesh.stop_server();
        mesh.start_server();
        mesh.wait_for_log("reconnected", 2s, static_cast<std::size_t>(round));
        break;
    }
    jetfan.signal(SIGTERM);
    REQUIRE(jetfan.wait(60s) == 0);
  }
  const std::string log = mesh.jetfan_log();
  CHECK_THAT(log, !Catch::Contains("AddressSanitizer") && !Catch::Contains("runtime error"));

  // Nothing was lost: one last jetfan delivers whatever is still owed, and the consumer settles.
  mesh.start_jetfan(config);
  mesh.start_handler("builder");
  REQUIRE(mesh.wait_settled(60s));
  std::set<std::string> payloads;
  for (int instance = 1; instance <= 101; ++instance) {
    for (const auto& seen : mesh.seen("builder", instance)) payloads.insert(seen.payload);
  }
  CHECK(payloads.size() == published);
}
