// What jetfan does with a consumer's priority groups: read a pinned_client group on a server without
// the pin bugs, refuse the rest with the reason.

#include <catch2/catch.hpp>

#include "priority_group.hpp"

using namespace jetfan;
using std::chrono::milliseconds;

namespace {

Config config() {
  Config c;
  c.file = "builder.yaml";
  c.consumer.stream = "EVENTS";
  c.consumer.durable = "builder";
  return c;
}

ConsumerFacts pinned(std::string version) {
  ConsumerFacts facts;
  facts.from_server = true;
  facts.ack_policy = AckPolicy::kExplicit;
  facts.priority_policy = "pinned_client";
  facts.priority_groups = {"jobs"};
  facts.priority_timeout = milliseconds(120000);
  facts.server_version = std::move(version);
  return facts;
}

}  // namespace

TEST_CASE("priority groups: none leaves jetfan the only reader", "[unit]") {
  ConsumerFacts facts;
  const auto plan = plan_priority_group(config(), facts);
  CHECK_FALSE(plan.pin);
  CHECK(plan.refused.empty());
  facts.priority_policy = "none";
  CHECK_FALSE(plan_priority_group(config(), facts).pin);
}

TEST_CASE("priority groups: one pinned_client group on 2.15 is read with its group and timeout", "[unit]") {
  const auto plan = plan_priority_group(config(), pinned("2.15.1"));
  REQUIRE(plan.pin);
  CHECK(plan.pin->group == "jobs");
  CHECK(plan.pin->priority_timeout == milliseconds(120000));
  CHECK(plan.refused.empty());
  CHECK(plan.warning.empty());
}

TEST_CASE("priority groups: a server with the known pin bugs is refused, naming its version", "[unit]") {
  for (const char* version : {"2.11.17", "2.12.11", "2.14.2"}) {
    INFO(version);
    const auto plan = plan_priority_group(config(), pinned(version));
    CHECK_FALSE(plan.pin);
    CHECK_THAT(plan.refused, Catch::Contains("consumer \"builder\" of stream \"EVENTS\" has priority groups (policy "
                                             "pinned_client, groups \"jobs\")") &&
                                 Catch::Contains(std::string("nats-server ") + version + " has known pin bugs"));
  }
}

TEST_CASE("priority groups: a server of unknown version is served with a warning", "[unit]") {
  const auto plan = plan_priority_group(config(), pinned(""));
  CHECK(plan.pin);
  CHECK_THAT(plan.warning, Catch::Contains("version could not be read"));
}

TEST_CASE("priority groups: overflow, several groups and another ack policy are refused with the reason", "[unit]") {
  auto overflow = pinned("2.15.1");
  overflow.priority_policy = "overflow";
  CHECK_THAT(plan_priority_group(config(), overflow).refused, Catch::Contains("two readers"));
  auto prioritized = pinned("2.15.1");
  prioritized.priority_policy = "prioritized";
  CHECK_THAT(plan_priority_group(config(), prioritized).refused, Catch::Contains("policy prioritized"));
  auto two = pinned("2.15.1");
  two.priority_groups = {"a", "b"};
  CHECK_THAT(plan_priority_group(config(), two).refused, Catch::Contains("exactly one"));
  auto all = pinned("2.15.1");
  all.ack_policy = AckPolicy::kAll;
  CHECK_THAT(plan_priority_group(config(), all).refused, Catch::Contains("needs AckPolicy explicit"));
}
