// ConsumingHealth: the reasons jetfan is not consuming, and the grace a reconnect gets.

#include <catch2/catch.hpp>

#include "consuming_health.hpp"

using namespace jetfan;
using std::chrono::milliseconds;

TEST_CASE("a lost connection is a reason only after the grace", "[unit]") {
  ConsumingHealth health(milliseconds(10000));
  const TimePoint t0 = TimePoint{} + std::chrono::hours(1);
  CHECK(health.reasons(t0).empty());
  health.disconnected(t0, "Connection refused");
  CHECK_FALSE(health.connected());
  CHECK(health.reasons(t0 + milliseconds(9999)).empty());
  const auto reasons = health.reasons(t0 + milliseconds(12000));
  REQUIRE(reasons.size() == 1);
  CHECK_THAT(reasons[0], Catch::StartsWith("not connected to NATS for 12s (Connection refused)"));
  // A second report while down keeps the time it went.
  health.disconnected(t0 + milliseconds(5000), "still refused");
  CHECK(*health.disconnected_for(t0 + milliseconds(12000)) == milliseconds(12000));
  health.reconnected();
  CHECK(health.connected());
  CHECK(health.reasons(t0 + milliseconds(20000)).empty());
  CHECK(health.last_disconnect() == "still refused");
}

TEST_CASE("a missing consumer and another reader are reasons at once, until cleared", "[unit]") {
  ConsumingHealth health(milliseconds(10000));
  const TimePoint t0 = TimePoint{} + std::chrono::hours(1);
  health.consumer_missing("the server says: consumer not found (404)");
  health.other_reader("another client reads consumer \"c\"");
  const auto reasons = health.reasons(t0);
  REQUIRE(reasons.size() == 2);
  CHECK_THAT(reasons[0], Catch::Contains("consumer not found"));
  CHECK(reasons[1] == "another client reads consumer \"c\"");
  CHECK(health.other_reader_seen());
  health.consumer_missing(std::nullopt);
  health.other_reader(std::nullopt);
  CHECK(health.reasons(t0).empty());
}
