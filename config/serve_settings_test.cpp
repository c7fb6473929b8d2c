#include "serve_settings.hpp"

#include <catch2/catch.hpp>

using namespace jetfan;
using std::chrono::milliseconds;

namespace {

Config config_with(std::optional<AckPolicy> configured = std::nullopt,
                   std::optional<std::int64_t> max_held = std::nullopt) {
  auto loaded = load_config_text(R"(consumer: {stream: EVENTS, durable: d}
socket: {path: /run/jetfan/x.sock}
handlers:
  - {name: a, patterns: ["#"], max_inflight: 7, ack_timeout: 2s}
  - {name: b, patterns: ["x.*"]}
)",
                                 "x.yaml");
  REQUIRE(loaded.config);
  loaded.config->consumer.ack_policy = configured;
  loaded.config->consumer.max_held = max_held;
  return *loaded.config;
}

ConsumerFacts from_server(AckPolicy policy, milliseconds ack_wait, std::int64_t max_ack_pending) {
  ConsumerFacts facts;
  facts.ack_policy = policy;
  facts.ack_wait = ack_wait;
  facts.max_ack_pending = max_ack_pending;
  facts.max_deliver = 5;
  facts.from_server = true;
  return facts;
}

}  // namespace

TEST_CASE("serve settings: keepalive is a third of AckWait, max_held is MaxAckPending", "[unit]") {
  const auto result = derive_serve_settings(config_with(), from_server(AckPolicy::kAll, milliseconds(9000), 500));
  REQUIRE(result.settings);
  const auto& s = *result.settings;
  CHECK(s.core.keepalive == milliseconds(3000));
  CHECK(s.core.ack_policy == AckPolicy::kAll);
  CHECK(s.core.max_deliver == 5);
  CHECK(s.pull.max_held == 500);
  CHECK(s.pull.batch == 125);  // a quarter of max_held
  REQUIRE(s.core.handlers.size() == 2);
  CHECK(s.core.handlers[0].max_inflight == 7);
  CHECK(s.core.handlers[0].ack_timeout == milliseconds(2000));
  CHECK(s.core.handlers[1].max_inflight == static_cast<std::uint32_t>(defaults::kMaxInflight));
  CHECK(s.core.handlers[1].ack_timeout == defaults::kAckTimeout);
  CHECK(s.admission.at(1).name == "b");
  CHECK(s.warnings.empty());
}

TEST_CASE("serve settings: the config's max_held wins, unlimited MaxAckPending has a default", "[unit]") {
  CHECK(
      derive_serve_settings(config_with(std::nullopt, 42), from_server(AckPolicy::kExplicit, milliseconds(30000), 500))
          .settings->pull.max_held == 42);
  CHECK(derive_serve_settings(config_with(), from_server(AckPolicy::kExplicit, milliseconds(30000), -1))
            .settings->pull.max_held == defaults::kMaxHeldUnlimited);
}

TEST_CASE("serve settings: the pull batch is a quarter of max_held, at most kBatchMax, unless configured", "[unit]") {
  const auto batch = [](const Config& config, std::int64_t max_ack_pending) {
    return derive_serve_settings(config, from_server(AckPolicy::kExplicit, milliseconds(30000), max_ack_pending))
        .settings->pull.batch;
  };
  CHECK(batch(config_with(), 1000) == 250);
  CHECK(batch(config_with(), 20000) == static_cast<std::size_t>(defaults::kBatchMax));
  CHECK(batch(config_with(), 3) == 1);  // never 0
  CHECK(batch(config_with(), -1) == defaults::kMaxHeldUnlimited / defaults::kBatchShareOfHeld);
  CHECK(batch(config_with(std::nullopt, 100), 20000) == 25);  // the config's max_held counts, not the server's
  auto configured = config_with();
  configured.consumer.batch = 32;
  CHECK(batch(configured, 20000) == 32);
  CHECK(batch(configured, 20) == 20);  // never more than MaxAckPending
  CHECK(batch(config_with(std::nullopt, 5000), 1000) == 1000);
}

TEST_CASE("serve settings: a tiny AckWait does not make the keepalive spin", "[unit]") {
  CHECK(derive_serve_settings(config_with(), from_server(AckPolicy::kExplicit, milliseconds(60), 10))
            .settings->core.keepalive == defaults::kMinKeepalive);
}

TEST_CASE("serve settings: the server's AckPolicy wins over the config's, with a warning", "[unit]") {
  const auto result =
      derive_serve_settings(config_with(AckPolicy::kAll), from_server(AckPolicy::kExplicit, milliseconds(30000), 10));
  CHECK(result.settings->core.ack_policy == AckPolicy::kExplicit);
  REQUIRE(result.settings->warnings.size() == 1);
  CHECK_THAT(result.settings->warnings[0], Catch::Contains("using the server's"));
}

TEST_CASE("serve settings: without consumer info the config's AckPolicy is used, or it is an error", "[unit]") {
  ConsumerFacts unknown;
  const auto used = derive_serve_settings(config_with(AckPolicy::kAll), unknown);
  REQUIRE(used.settings);
  CHECK(used.settings->core.ack_policy == AckPolicy::kAll);
  CHECK(used.settings->ack_wait == defaults::kAckWaitUnknown);
  CHECK(used.settings->core.keepalive == defaults::kAckWaitUnknown / defaults::kKeepalivesPerAckWait);
  REQUIRE(used.settings->warnings.size() == 1);
  CHECK_THAT(used.settings->warnings[0], Catch::Contains("using consumer.ack_policy all"));
  const auto refused = derive_serve_settings(config_with(), unknown);
  CHECK_FALSE(refused.settings);
  CHECK_THAT(refused.error, Catch::Contains("consumer.ack_policy is not set"));
}

TEST_CASE("serve settings: AckPolicy none warns that delivery is at-most-once", "[unit]") {
  const auto result = derive_serve_settings(config_with(), from_server(AckPolicy::kNone, milliseconds(30000), 10));
  REQUIRE(result.settings->warnings.size() == 1);
  CHECK_THAT(result.settings->warnings[0], Catch::Contains("at-most-once"));
}

TEST_CASE("serve settings: a retry budget takes delivery's delays unless it has its own", "[unit]") {
  auto loaded = load_config_text(R"(consumer: {stream: EVENTS, durable: d}
socket: {path: /run/jetfan/x.sock}
handlers:
  - {name: a, patterns: ["#"], retry: {max_attempts: 3}, dead_letter: {subject: dlq.a}}
  - {name: b, patterns: ["#"], retry: {max_attempts: 9, backoff: 5s}}
  - {name: c, patterns: ["#"]}
delivery: {nak_delay: 2s, nak_delay_max: 10s}
)",
                                 "x.yaml");
  REQUIRE(loaded.config);
  const auto result =
      derive_serve_settings(*loaded.config, from_server(AckPolicy::kExplicit, milliseconds(30000), 100));
  REQUIRE(result.settings);
  const auto& handlers = result.settings->core.handlers;
  CHECK(handlers[0].retry.max_attempts == 3);
  CHECK(handlers[0].retry.backoff == milliseconds(2000));
  CHECK(handlers[0].retry.backoff_max == milliseconds(10000));
  CHECK(handlers[0].retry.dead_letter);
  CHECK(handlers[1].retry.backoff == milliseconds(5000));
  CHECK(handlers[1].retry.backoff_max == milliseconds(10000));
  CHECK_FALSE(handlers[1].retry.dead_letter);
  CHECK(handlers[2].retry.max_attempts == 0);
  CHECK(handlers[2].retry.backoff == milliseconds(0));
  // MaxDeliver 5 cuts b's budget of 9 short.
  bool warned = false;
  for (const auto& w : result.settings->warnings) warned = warned || w.find("handler b: retry.max_attempts 9") == 0;
  CHECK(warned);
}

TEST_CASE("serve settings: a pinned_client group on a good server is read as such, overflow is refused", "[unit]") {
  ConsumerFacts facts = from_server(AckPolicy::kExplicit, milliseconds(30000), 100);
  facts.priority_policy = "pinned_client";
  facts.priority_groups = {"jobs"};
  facts.priority_timeout = milliseconds(3000);
  facts.server_version = "2.15.1";
  const auto pinned = derive_serve_settings(config_with(), facts);
  REQUIRE(pinned.settings);
  REQUIRE(pinned.settings->pin);
  CHECK(pinned.settings->pin->group == "jobs");
  CHECK(pinned.settings->pin->priority_timeout == milliseconds(3000));

  facts.priority_policy = "overflow";
  const auto overflow = derive_serve_settings(config_with(), facts);
  REQUIRE_FALSE(overflow.settings);
  CHECK_THAT(overflow.error, Catch::Contains("consumer \"d\" of stream \"EVENTS\" has priority groups"));

  ConsumerFacts none = from_server(AckPolicy::kExplicit, milliseconds(30000), 100);
  none.priority_policy = "none";
  const auto plain = derive_serve_settings(config_with(), none);
  REQUIRE(plain.settings);
  CHECK_FALSE(plain.settings->pin);
}

TEST_CASE("serve settings: a paused consumer is served, with a warning naming its resume time", "[unit]") {
  ConsumerFacts facts = from_server(AckPolicy::kExplicit, milliseconds(30000), 100);
  facts.paused = true;
  facts.pause_until = "2100-01-01T00:00:00Z";
  const auto result = derive_serve_settings(config_with(), facts);
  REQUIRE(result.settings);
  REQUIRE_FALSE(result.settings->warnings.empty());
  CHECK_THAT(result.settings->warnings.front(), Catch::Contains("is paused until 2100-01-01T00:00:00Z"));
}
