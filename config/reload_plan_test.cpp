#include <catch2/catch.hpp>

#include <map>

#include "config_keys.hpp"
#include "reload_plan.hpp"

using namespace jetfan;

namespace {

const std::string kBase =
    "nats:\n  servers: [\"nats://127.0.0.1:4222\"]\n"
    "consumer:\n  stream: EVENTS\n  durable: node1_builder\n"
    "socket:\n  path: /run/jetfan/builder.sock\n";

Config load(const std::string& rest, const std::string& base = kBase) {
  auto result = load_config_text(base + rest, "test.yaml");
  INFO(result.errors.size() << " errors; first: " << (result.errors.empty() ? "" : result.errors[0]));
  REQUIRE(result.config);
  return *result.config;
}

const std::string kTwo =
    "handlers:\n  - name: builder\n    patterns: [\"a.*\"]\n  - name: audit\n    patterns: [\"#\"]\n";

}  // namespace

TEST_CASE("reload: the same config changes nothing", "[unit]") {
  const auto plan = plan_reload(load(kTwo), load(kTwo));
  CHECK(plan.refused.empty());
  CHECK(plan.changes.empty());
  CHECK(plan.old_to_new == std::vector<std::optional<std::size_t>>{0, 1});
}

TEST_CASE("reload: handlers are matched by name, and added, removed, moved and changed ones are named", "[unit]") {
  const auto running = load(kTwo + "delivery:\n  nak_delay: 1s\nlog:\n  level: info\n");
  const auto next = load(
      "handlers:\n  - name: fresh\n    patterns: [\"b.>\"]\n"
      "  - name: builder\n    patterns: [\"a.*\", \"c\"]\n    max_inflight: 8\n    ack_timeout: 5s\n"
      "delivery:\n  nak_delay: 50ms\n  nak_delay_max: 2s\nlog:\n  level: debug\n");
  const auto plan = plan_reload(running, next);
  REQUIRE(plan.refused.empty());
  CHECK(plan.old_to_new == std::vector<std::optional<std::size_t>>{1, std::nullopt});
  CHECK(plan.added == std::vector<std::string>{"fresh"});
  CHECK(plan.removed == std::vector<std::string>{"audit"});
  CHECK(plan.changes == std::vector<std::string>{
                            "handlers.builder.patterns: [a.*] -> [a.*, c]",
                            "handlers.builder.max_inflight: 64 -> 8",
                            "handlers.builder.ack_timeout: 30000ms -> 5000ms",
                            "handlers.builder (place in the list): 1 -> 2",
                            "handlers: removed audit",
                            "handlers: added fresh [b.>]",
                            "delivery.nak_delay: 1000ms -> 50ms",
                            "delivery.nak_delay_max: 60000ms -> 2000ms",
                            "log.level: info -> debug",
                        });
}

TEST_CASE("reload: every key that needs a restart is refused by name", "[unit]") {
  const auto running = load(kTwo);
  const auto next = load(kTwo + "metrics:\n  listen: 9464\ndelivery:\n  remember: 5\n",
                         "nats:\n  servers: [\"nats://10.0.0.1:4222\"]\n  token: t\n"
                         "consumer:\n  stream: EVENTS\n  durable: node2_builder\n  batch: 7\n"
                         "key:\n  strip_prefix: \"ev.\"\n"
                         "socket:\n  path: /run/jetfan/other.sock\n  mode: \"0600\"\n");
  const auto plan = plan_reload(running, next);
  CHECK(plan.refused == std::vector<std::string>{"nats.servers", "nats.name", "nats.token", "consumer.durable",
                                                 "consumer.batch", "key.strip_prefix", "socket.path", "socket.mode",
                                                 "control.path", "metrics.listen", "delivery.remember"});
  CHECK(plan.changes.empty());
}

TEST_CASE("control socket and metrics settings: defaults and errors", "[unit]") {
  const auto config = load(kTwo);
  CHECK(config.control.path == "/run/jetfan/builder.ctl");
  CHECK(config.control.mode == 0600);
  CHECK_FALSE(config.metrics);
  const auto port_only = load(kTwo + "metrics:\n  listen: \"9464\"\ncontrol:\n  path: /tmp/c.ctl\n  mode: \"0660\"\n");
  REQUIRE(port_only.metrics);
  CHECK(port_only.metrics->host == "127.0.0.1");
  CHECK(port_only.metrics->port == 9464);
  CHECK(port_only.control.path == "/tmp/c.ctl");
  CHECK(port_only.control.mode == 0660);
  const auto v6 = load(kTwo + "metrics:\n  listen: \"[::1]:0\"\n");
  CHECK(v6.metrics->host == "::1");
  for (const char* bad : {"metrics:\n  listen: \"host:99999\"\n", "metrics:\n  listen: \":\"\n",
                          "control:\n  path: /run/jetfan/builder.sock\n"}) {
    INFO(bad);
    CHECK_FALSE(load_config_text(kBase + kTwo + bad, "t.yaml").config);
  }
}

TEST_CASE("reload: every config key is either applied by a reload or refused, and only one of them", "[unit]") {
  std::map<std::string, int> classified;
  for (const auto& key : restart_keys()) ++classified[key];
  for (const auto& key : reloadable_keys()) ++classified[key];
  auto check_section = [&](const std::string& section, const auto& keys) {
    for (const char* key : keys) {
      const std::string name = section + "." + key;
      INFO(name);
      CHECK(classified[name] == 1);
    }
  };
  check_section("nats", config_keys::kNats);
  check_section("consumer", config_keys::kConsumer);
  check_section("key", config_keys::kKey);
  check_section("socket", config_keys::kSocket);
  check_section("control", config_keys::kControl);
  check_section("metrics", config_keys::kMetrics);
  check_section("tracing", config_keys::kTracing);
  check_section("ledger", config_keys::kLedger);
  check_section("handlers", config_keys::kHandler);
  check_section("delivery", config_keys::kDelivery);
  check_section("log", config_keys::kLog);
}

TEST_CASE("reload: when_full is applied and named, max_held_bytes is refused", "[unit]") {
  const auto running = load(kTwo);
  const auto applied = plan_reload(running, load("handlers:\n  - name: builder\n    patterns: [\"a.*\"]\n"
                                                 "    when_full: hand_back\n  - name: audit\n    patterns: [\"#\"]\n"));
  CHECK(applied.refused.empty());
  CHECK(applied.changes == std::vector<std::string>{"handlers.builder.when_full: hold -> hand_back"});
  const auto ordered = plan_reload(running, load("handlers:\n  - name: builder\n    patterns: [\"a.*\"]\n"
                                                 "    order_by: key\n  - name: audit\n    patterns: [\"#\"]\n"));
  CHECK(ordered.refused.empty());
  CHECK(ordered.changes == std::vector<std::string>{"handlers.builder.order_by: none -> key"});
  std::string bytes = kBase;
  bytes.insert(bytes.find("socket:"), "  max_held_bytes: 1MiB\n");
  const auto refused = plan_reload(running, load(kTwo, bytes));
  CHECK(refused.refused == std::vector<std::string>{"consumer.max_held_bytes"});
}

TEST_CASE("reload: a secret kept in a file is compared by its path, not read", "[unit]") {
  const std::string with_file =
      "nats:\n  servers: [\"nats://127.0.0.1:4222\"]\n  user: builder\n  password_file: /etc/jetfan/pw\n"
      "consumer:\n  stream: EVENTS\n  durable: node1_builder\nsocket:\n  path: /run/jetfan/builder.sock\n";
  CHECK(plan_reload(load(kTwo, with_file), load(kTwo, with_file)).refused.empty());
  std::string moved = with_file;
  moved.replace(moved.find("/etc/jetfan/pw"), 14, "/etc/jetfan/p2");
  CHECK(plan_reload(load(kTwo, with_file), load(kTwo, moved)).refused ==
        std::vector<std::string>{"nats.password_file"});
}

TEST_CASE("reload: tracing.sample_ratio is applied, and every other tracing key, turning it on and off, is refused",
          "[unit]") {
  const std::string on = "tracing:\n  endpoint: http://127.0.0.1:4318/v1/traces\n";
  const auto running = load(kTwo + on + "  sample_ratio: 0.5\n");
  const auto ratio = plan_reload(running, load(kTwo + on + "  sample_ratio: 0.05\n"));
  CHECK(ratio.refused.empty());
  CHECK(ratio.changes == std::vector<std::string>{"tracing.sample_ratio: 0.5 -> 0.05"});
  const auto defaulted = plan_reload(running, load(kTwo + on));
  CHECK(defaulted.refused.empty());
  CHECK(defaulted.changes == std::vector<std::string>{"tracing.sample_ratio: 0.5 -> 1"});
  CHECK(plan_reload(running, running).changes.empty());

  CHECK(
      plan_reload(running, load(kTwo + "tracing:\n  endpoint: http://collector:4318\n  sample_ratio: 0.5\n")).refused ==
      std::vector<std::string>{"tracing.endpoint"});
  CHECK(plan_reload(load(kTwo), running).refused == std::vector<std::string>{"tracing.endpoint"});  // turned on
  CHECK(plan_reload(running, load(kTwo)).refused == std::vector<std::string>{"tracing.endpoint"});  // turned off
  const auto others =
      plan_reload(running, load(kTwo + on +
                                "  sample_ratio: 0.1\n  service_name: orders\n  max_queued: 100\n  max_batch: 10\n"
                                "  interval: 1s\n  request_timeout: 1s\n"));
  CHECK(others.refused == std::vector<std::string>{"tracing.service_name", "tracing.max_queued", "tracing.max_batch",
                                                   "tracing.interval", "tracing.request_timeout"});
  CHECK(others.changes.empty());
}

TEST_CASE("reload: every ledger key, and turning the ledger on or off, is refused", "[unit]") {
  const std::string on = "ledger:\n  bucket: jetfan_confirmations\n";
  const auto running = load(kTwo + on);
  const auto same = plan_reload(running, load(kTwo + on + "  interval: 1s\n  max_records: 100000\n"));
  CHECK(same.refused.empty());  // the defaults written out are no change
  CHECK(same.changes.empty());

  CHECK(plan_reload(load(kTwo), running).refused == std::vector<std::string>{"ledger.bucket"});  // turned on
  CHECK(plan_reload(running, load(kTwo)).refused == std::vector<std::string>{"ledger.bucket"});  // turned off
  CHECK(plan_reload(running, load(kTwo + "ledger:\n  bucket: other\n")).refused ==
        std::vector<std::string>{"ledger.bucket"});
  const auto others = plan_reload(running, load(kTwo + on + "  interval: 5s\n  max_records: 10\n  max_in_flight: 1\n"));
  CHECK(others.refused == std::vector<std::string>{"ledger.interval", "ledger.max_records", "ledger.max_in_flight"});
  CHECK(others.changes.empty());
  // Turned on with other keys than the defaults: named once, by its bucket.
  CHECK(plan_reload(load(kTwo), load(kTwo + on + "  interval: 5s\n")).refused ==
        std::vector<std::string>{"ledger.bucket"});
}
