// handlers[].max_rate with the real jetfan, a real server and real handlers: the limited handler
// gets its messages no faster than its rate allows, the other one gets them at once, status says
// what holds it back, and nothing is lost. Only lower bounds on time: a slow machine makes them
// surer, never false.

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <chrono>

#include "control.hpp"
#include "mesh.hpp"

using namespace jetfan::testing;
using namespace std::chrono_literals;

TEST_CASE("a handler with max_rate gets no more than its rate, the other handler at once, and nothing is lost",
          "[integration]") {
  Mesh mesh;
  // 5 a second, a burst of 1: 30 messages take at least 29 / 5 = 5.8 s to send to it.
  mesh.start_jetfan(
      mesh.config("  - name: slow\n    patterns: [\"a.*\"]\n    max_rate: 5\n"
                  "  - name: fast\n    patterns: [\"a.*\"]\n"));
  mesh.start_handler("slow");
  mesh.start_handler("fast");
  const auto started = std::chrono::steady_clock::now();
  for (int i = 0; i < 30; ++i) mesh.publish("a.x", std::to_string(i));
  REQUIRE(wait_until([&] { return mesh.seen("fast").size() == 30; }, 60s));
  // fast has all of them while slow is still held back, and status says why.
  const auto doc = nlohmann::json::parse(control_request(mesh.control_path(), "STATUS JSON"));
  CHECK(mesh.seen("slow").size() < 30);
  CHECK(doc["handlers"][0]["max_rate"] == 5);
  CHECK(doc["handlers"][0]["rate_waiting"] == true);
  CHECK(doc["handlers"][1]["rate_waiting"] == false);
  CHECK_THAT(control_request(mesh.control_path(), "STATUS"), Catch::Contains("max_rate 5, ack_timeout"));

  REQUIRE(wait_until([&] { return mesh.seen("slow").size() == 30; }, 60s));
  const auto took = std::chrono::steady_clock::now() - started;
  CHECK(took >= 5800ms);
  REQUIRE(mesh.wait_settled());
  for (const auto& seen : mesh.seen("slow")) CHECK(seen.deliveries == 1);  // none redelivered
}
