// DispatchStatus on its own, over real parts: what a snapshot says of the handlers and of the few
// figures only the dispatcher counts, across a reload that moves the handlers.

#include <catch2/catch.hpp>

#include "dispatch_status.hpp"
#include "fake_upstream.hpp"

using namespace jetfan;
using std::chrono::milliseconds;

namespace {

class NoHost final : public DeadLetterJobHost {
 public:
  TimePoint now() const override { return {}; }
  bool serving() const override { return true; }
  std::size_t instances(std::size_t) const override { return 0; }
  bool api_request(std::uint64_t, const std::string&, const std::string&) override { return false; }
  bool redrive(std::size_t, const jetstream::StoredMessage&) override { return false; }
};

Config two_handlers() {
  Config c;
  c.consumer.stream = "STREAM";
  c.consumer.durable = "CONSUMER";
  c.consumer.batch = 4;
  c.consumer.max_held = 64;
  HandlerSettings audit;
  audit.name = "audit";
  audit.patterns = {"a.>"};
  HandlerSettings builder;
  builder.name = "builder";
  builder.patterns = {"b.*"};
  builder.order_by = OrderBy{OrderBy::Kind::kToken, 2, ""};
  c.handlers = {audit, builder};
  return c;
}

struct Parts {
  Config config = two_handlers();
  ServeSettings settings = std::move(*derive_serve_settings(config, fake_consumer_facts()).settings);
  DispatchCore core{settings.core};
  PullLedger ledger{settings.pull};
  HandlerTable table{config.handlers.size(), ConnectionLimits{10, 10}};
  NoHost host;
  DeadLetterJobs jobs{config, host};
  RateLimitedLog warnings{5, milliseconds(10000)};
  FullWatch full{config, settings.pull, warnings};
  MessageBytesArena arena;
  FakeUpstream upstream{arena, ""};
  HandlerPublisher publisher{upstream};
  DispatchStatus status{{config, settings, core, ledger, table, jobs, full, arena, publisher}};
};

}  // namespace

TEST_CASE("dispatch status: the snapshot has each handler, and what only the dispatcher counted", "[unit]") {
  Parts p;
  p.status.reconnected();
  p.status.reconnected();
  p.status.without_order_key(1);
  p.status.arrived_aged(std::chrono::milliseconds(3));
  StatusSnapshot s;
  p.status.fill(s, "serving", RateWindow(milliseconds(60000)), TimePoint{}, 1000);
  CHECK(s.state == "serving");
  CHECK(s.ready);
  CHECK(s.reconnects == 2);
  CHECK(s.publish_age.count() == 1);
  CHECK(s.max_held == p.settings.pull.max_held);
  REQUIRE(s.handlers.size() == 2);
  CHECK(s.handlers[0].name == "audit");
  CHECK(s.handlers[0].without_order_key == 0);
  CHECK(s.handlers[1].name == "builder");
  CHECK(s.handlers[1].order_by == "token:2");
  CHECK(s.handlers[1].without_order_key == 1);
  CHECK(s.handlers[1].instances.empty());
  const auto named = p.status.named_stats();
  REQUIRE(named.size() == 2);
  CHECK(named[1].name == "builder");

  StatusSnapshot draining;
  p.status.fill(draining, "draining", RateWindow(milliseconds(60000)), TimePoint{}, 1000);
  CHECK_FALSE(draining.ready);
}

TEST_CASE("dispatch status: a reload moves a handler's counts with it, and a removed one's go", "[unit]") {
  Parts p;
  p.status.without_order_key(0);
  p.status.without_order_key(1);
  p.status.without_order_key(1);
  // builder stays, now first; audit is removed; a new handler is second.
  p.status.reindex({std::nullopt, 0}, 2);
  p.config.handlers = {two_handlers().handlers[1], two_handlers().handlers[0]};
  p.config.handlers[1].name = "new";
  StatusSnapshot s;
  p.status.fill(s, "serving", RateWindow(milliseconds(60000)), TimePoint{}, 1000);
  REQUIRE(s.handlers.size() == 2);
  CHECK(s.handlers[0].name == "builder");
  CHECK(s.handlers[0].without_order_key == 2);
  CHECK(s.handlers[1].without_order_key == 0);
}

TEST_CASE("dispatch status: a handler's publish subjects and what its publishes came to", "[unit]") {
  Parts p;
  p.config.handlers[1].publish = PublishSettings{{"out.>"}};
  proto::Command pub;
  pub.verb = proto::Verb::kPub;
  pub.id = 1;
  pub.subject = "out.x";
  REQUIRE_FALSE(p.publisher.publish(1, "builder", p.config.handlers[1].publish, pub, std::nullopt, "", TimePoint{}));
  pub.id = 2;
  REQUIRE(p.publisher.publish(1, "builder", std::nullopt, pub, std::nullopt, "", TimePoint{}));  // refused
  StatusSnapshot s;
  p.status.fill(s, "serving", RateWindow(milliseconds(60000)), TimePoint{}, 1000);
  REQUIRE(s.handlers.size() == 2);
  CHECK(s.handlers[0].publish_subjects.empty());
  CHECK(s.handlers[0].publishes.refused == 0);
  CHECK(s.handlers[1].publish_subjects == std::vector<std::string>{"out.>"});
  CHECK(s.handlers[1].publishes.in_flight == 1);
  CHECK(s.handlers[1].publishes.refused == 1);
}
