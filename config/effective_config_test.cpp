#include "effective_config.hpp"

#include <yaml-cpp/yaml.h>
#include <catch2/catch.hpp>

#include "config_keys.hpp"

using namespace jetfan;

namespace {

// Every key set that can be set together; token and password are the secrets.
const char* kFull = R"(nats:
  servers: ["nats://a:4222", "nats://b:4222"]
  name: mine
  user: jetfan
  password: s3cret-password
  tls: {ca: /etc/ca.pem, cert: /etc/c.pem, key: /etc/k.pem}
  connect_timeout: 3s
  reconnect_wait: 250ms
  retry_max: 1m30s
consumer:
  stream: EVENTS
  durable: node1_builder
  ack_policy: explicit
  max_held: 500
  max_held_bytes: 48MiB
  batch: 100
  pull_expires: 20s
  idle_heartbeat: 1500ms
  on_other_reader: exit
key:
  strip_prefix: "events."
socket:
  path: /run/jetfan/builder.sock
  mode: "0640"
  owner: builder-user
  group: "0"
  hello_timeout: 2s
  max_connections: 10
  max_unidentified: 3
  max_output_buffer: 512KiB
  idle_timeout: 45s
  ping_timeout: 5s
control:
  path: /run/jetfan/other.ctl
  mode: "0660"
  allow: {users: [ops], uids: [7]}
  allow_read: {groups: [monitoring], gids: [8]}
metrics:
  listen: "[::1]:9464"
  max_connections: 4
tracing:
  endpoint: http://[::1]:4318/v1/traces
  sample_ratio: 0.25
  service_name: orders
  max_queued: 1000
  max_batch: 100
  interval: 1500ms
  request_timeout: 2s
ledger:
  bucket: jetfan_confirmations
  interval: 2500ms
  max_records: 5000
  max_in_flight: 16
handlers:
  - name: builder
    patterns: ["a.*", "b.>"]
    max_inflight: 8
    ack_timeout: 1m
    allow: {users: [builder-user], groups: [builders], uids: [1], gids: [2]}
    max_instances: 2
    max_rate: 12.5
    adaptive_inflight: true
    min_inflight: 2
    when_full: hand_back
    order_by: token:2
    retry: {max_attempts: 5, backoff: 100ms, backoff_max: 2s}
    dead_letter: {subject: dlq.builder}
    publish: {subjects: [out.built, "audit.*.>"], max_in_flight: 32, max_bytes: 2MiB, timeout: 3s}
    paused: true
  - name: audit
    patterns: ["#"]
delivery:
  nak_delay: 200ms
  nak_delay_max: 1m
  remember: 5000
  drain_timeout: 10s
log:
  level: debug
  format: json
)";

// The ways to authenticate the full config does not use: one at a time.
const std::string kRest =
    "consumer: {stream: EVENTS, durable: d}\nsocket: {path: /run/jetfan/x.sock}\n"
    "handlers: [{name: a, patterns: [\"#\"]}]\n";
const std::vector<std::string> kOtherAuth = {
    "nats:\n  creds: /etc/jetfan/x.creds\n" + kRest,
    "nats:\n  nkey_seed: /etc/jetfan/seed\n  nkey: UABC\n" + kRest,
    "nats:\n  token: s3cret-token\n" + kRest,
    "nats:\n  token_file: /etc/jetfan/token\n" + kRest,
    "nats:\n  user: me\n  password_file: /etc/jetfan/password\n" + kRest,
};

std::vector<std::string> every_config() {
  std::vector<std::string> all = {kFull};
  all.insert(all.end(), kOtherAuth.begin(), kOtherAuth.end());
  return all;
}

Config loaded(const std::string& text) {
  auto result = load_config_text(text, "full.yaml");
  INFO(text);
  for (const auto& error : result.errors) INFO(error);
  REQUIRE(result.errors.empty());
  return *result.config;
}

// Every "section.key" (handlers.key, allow.key, ...) the YAML has, by walking it.
void keys_of(const YAML::Node& node, const std::string& section, std::set<std::string>& out) {
  if (node.IsSequence()) {
    for (const auto& item : node) keys_of(item, section, out);
  } else if (node.IsMap()) {
    for (const auto& entry : node) {
      const auto key = entry.first.as<std::string>();
      out.insert(section + "." + key);
      keys_of(entry.second, key == "allow_read" ? "allow" : key, out);
    }
  }
}

}  // namespace

TEST_CASE("durations and sizes are written as the config reads them", "[unit]") {
  CHECK(format_duration(Duration(0)) == "0ms");
  CHECK(format_duration(Duration(250)) == "250ms");
  CHECK(format_duration(Duration(1500)) == "1.5s");
  CHECK(format_duration(Duration(30'000)) == "30s");
  CHECK(format_duration(Duration(90'000)) == "1m30s");
  CHECK(format_duration(Duration(3'600'000)) == "1h");
  CHECK(format_duration(Duration(3'660'250)) == "1h1m0.25s");
  for (const long ms : {0L, 1L, 999L, 1000L, 1001L, 61'001L, 7'200'000L, 86'399'999L}) {
    INFO(ms);
    CHECK(parse_duration(format_duration(Duration(ms))) == Duration(ms));
  }
  CHECK(format_byte_size(4096) == "4KiB");
  CHECK(format_byte_size(32ULL << 20) == "32MiB");
  CHECK(format_byte_size(1000) == "1000");
  CHECK(format_byte_size(0) == "0");
}

TEST_CASE("the effective config loads back to itself, with defaults written and secrets hidden", "[unit]") {
  for (const auto& text : every_config()) {
    const Config config = loaded(text);
    const std::string printed = effective_config_yaml(config);
    INFO(printed);
    const Config again = loaded(printed);
    CHECK(effective_config_yaml(again) == printed);
  }
  const std::string full = effective_config_yaml(loaded(kFull));
  CHECK_THAT(full, !Catch::Contains("s3cret-password") && Catch::Contains("password: <hidden>"));
  CHECK_THAT(effective_config_yaml(loaded(kOtherAuth[2])),
             !Catch::Contains("s3cret-token") && Catch::Contains("token: <hidden>"));
  const std::string minimal = effective_config_yaml(loaded(kOtherAuth[0]));
  CHECK_THAT(minimal, Catch::Contains("servers: [nats://127.0.0.1:4222]") && Catch::Contains("max_held_bytes: 32MiB") &&
                          Catch::Contains("ack_timeout: 30s") &&
                          Catch::Contains("# ack_policy: the consumer's, from the server") &&
                          Catch::Contains("path: /run/jetfan/x.ctl") && Catch::Contains("# metrics: off") &&
                          Catch::Contains("\n# tracing: off\n") && Catch::Contains("\n# ledger: off\n"));
}

TEST_CASE("the effective config writes the tracing section with every key, defaults included, or says it is off",
          "[unit]") {
  CHECK_THAT(effective_config_yaml(loaded(kFull)),
             Catch::Contains("\ntracing:\n  endpoint: http://[::1]:4318/v1/traces\n  sample_ratio: 0.25\n"
                             "  service_name: orders\n  max_queued: 1000\n  max_batch: 100\n  interval: 1.5s\n"
                             "  request_timeout: 2s\nledger:\n"));
  const std::string defaults = effective_config_yaml(loaded(kRest + "tracing:\n  endpoint: http://collector\n"));
  CHECK_THAT(defaults, Catch::Contains("\ntracing:\n  endpoint: http://collector\n  sample_ratio: 1\n"
                                       "  service_name: jetfan\n  max_queued: 2048\n  max_batch: 512\n"
                                       "  interval: 5s\n  request_timeout: 5s\n") &&
                           !Catch::Contains("tracing: off"));
  const std::string none = effective_config_yaml(loaded(kRest + "tracing:\n  endpoint: http://c\n  sample_ratio: 0\n"));
  CHECK_THAT(none, Catch::Contains("  sample_ratio: 0\n"));
  CHECK(loaded(none).tracing->sample_ratio == 0);
}

TEST_CASE("the effective config writes the ledger section with every key, defaults included, or says it is off",
          "[unit]") {
  CHECK_THAT(effective_config_yaml(loaded(kFull)),
             Catch::Contains("\nledger:\n  bucket: jetfan_confirmations\n  interval: 2.5s\n  max_records: 5000\n"
                             "  max_in_flight: 16\nhandlers:\n"));
  const std::string defaults = effective_config_yaml(loaded(kRest + "ledger:\n  bucket: b\n"));
  CHECK_THAT(defaults, Catch::Contains("\nledger:\n  bucket: b\n  interval: 1s\n  max_records: 100000\n"
                                       "  max_in_flight: 64\n") &&
                           !Catch::Contains("ledger: off"));
  CHECK(loaded(defaults).ledger->bucket == "b");
  // Off, it is a comment between tracing and the handlers, as the sections come in the file.
  CHECK_THAT(effective_config_yaml(loaded(kRest)), Catch::Contains("# tracing: off\n# ledger: off\nhandlers:\n"));
}

TEST_CASE("the effective config writes every key the loader accepts", "[unit]") {
  namespace k = config_keys;
  std::set<std::string> written;
  for (const auto& text : every_config()) {
    keys_of(YAML::Load(effective_config_yaml(loaded(text))), "", written);
  }
  const std::vector<std::pair<std::string, std::vector<std::string>>> sections = {
      {"", {k::kTop.begin(), k::kTop.end()}},
      {"nats", {k::kNats.begin(), k::kNats.end()}},
      {"tls", {k::kNatsTls.begin(), k::kNatsTls.end()}},
      {"consumer", {k::kConsumer.begin(), k::kConsumer.end()}},
      {"key", {k::kKey.begin(), k::kKey.end()}},
      {"socket", {k::kSocket.begin(), k::kSocket.end()}},
      {"control", {k::kControl.begin(), k::kControl.end()}},
      {"metrics", {k::kMetrics.begin(), k::kMetrics.end()}},
      {"tracing", {k::kTracing.begin(), k::kTracing.end()}},
      {"ledger", {k::kLedger.begin(), k::kLedger.end()}},
      {"handlers", {k::kHandler.begin(), k::kHandler.end()}},
      {"retry", {k::kRetry.begin(), k::kRetry.end()}},
      {"dead_letter", {k::kDeadLetter.begin(), k::kDeadLetter.end()}},
      {"publish", {k::kPublish.begin(), k::kPublish.end()}},
      {"allow", {k::kAllow.begin(), k::kAllow.end()}},
      {"delivery", {k::kDelivery.begin(), k::kDelivery.end()}},
      {"log", {k::kLog.begin(), k::kLog.end()}},
  };
  for (const auto& [section, keys] : sections) {
    for (const auto& key : keys) {
      INFO(section << "." << key);
      CHECK(written.count(section + "." + key) == 1);
    }
  }
}
