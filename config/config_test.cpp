#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "accounts.hpp"
#include "config.hpp"

using jetfan::AccountLookup;
using jetfan::AccountName;
using jetfan::load_config_text;
using jetfan::resolve_accounts;

namespace Catch {
template <>
struct StringMaker<AccountName> {
  static std::string convert(const AccountName& a) { return "\"" + a.name + "\" at " + a.where; }
};
}  // namespace Catch

namespace {
const char* kGood = R"(nats:
  servers: ["nats://127.0.0.1:4222"]
consumer:
  stream: EVENTS
  durable: node1_builder
key:
  strip_prefix: "events."
socket:
  path: /run/jetfan/builder.sock
  mode: "0660"
handlers:
  - name: builder
    patterns: ["mesh-build-machine.built", "mesh-controller.built-before"]
    max_inflight: 64
    ack_timeout: 30s
  - name: audit
    patterns: ["#"]
)";

std::vector<std::string> errors_of(const std::string& text) { return load_config_text(text, "jetfan.yaml").errors; }

bool any_contains(const std::vector<std::string>& errors, const std::string& part) {
  for (const auto& e : errors) {
    if (e.find(part) != std::string::npos) return true;
  }
  return false;
}
}  // namespace

TEST_CASE("the example config of a builder and an audit handler loads", "[unit]") {
  const auto result = load_config_text(kGood, "jetfan.yaml");
  REQUIRE(result.errors.empty());
  const auto& config = *result.config;
  CHECK(config.consumer.stream == "EVENTS");
  CHECK(config.consumer.durable == "node1_builder");
  CHECK(config.key.strip_prefix == "events.");
  CHECK(config.socket.mode == 0660);
  REQUIRE(config.handlers.size() == 2);
  CHECK(config.handlers[0].ack_timeout == jetfan::Duration(30'000));
  CHECK(config.handlers[1].max_inflight == 64);
  CHECK(config.handlers[1].patterns == std::vector<std::string>{"#"});
  CHECK(config.nats.name == "jetfan-node1_builder");
  CHECK_FALSE(config.consumer.ack_policy);
}

TEST_CASE("every error is reported with file, line and key", "[unit]") {
  const auto errors = errors_of(R"(nats:
  servers: []
  token: abc
  user: me
consumer:
  stream: EVENTS
  durabel: x
  ack_policy: sometimes
socket:
  path: /tmp/x.sock
  mode: "999"
handlers:
  - name: builder
    patterns: ["a..b"]
    ack_timeout: 30x
    max_inflight: 0
  - name: builder
    patterns: []
  - name: "bad name"
    colour: red
)");
  CHECK(any_contains(errors, "jetfan.yaml:2: nats.servers: needs at least one"));
  CHECK(any_contains(errors, "nats: give only one of creds"));
  CHECK(any_contains(errors, "nats.password: is required with nats.user"));
  CHECK(any_contains(errors, "jetfan.yaml:7: consumer.durabel: unknown key"));
  CHECK(any_contains(errors, "consumer.durable: is required"));
  CHECK(any_contains(errors, "jetfan.yaml:8: consumer.ack_policy: \"sometimes\""));
  CHECK(any_contains(errors, "jetfan.yaml:11: socket.mode: \"999\""));
  CHECK(any_contains(errors, "jetfan.yaml:14: handlers[0].patterns[0]: \"a..b\""));
  CHECK(any_contains(errors, "jetfan.yaml:15: handlers[0].ack_timeout: \"30x\" is not a duration"));
  CHECK(any_contains(errors, "jetfan.yaml:16: handlers[0].max_inflight: \"0\" must be"));
  CHECK(any_contains(errors, "jetfan.yaml:17: handlers[1].name: \"builder\" is declared twice"));
  CHECK(any_contains(errors, "handlers[1].patterns: needs at least one pattern"));
  CHECK(any_contains(errors, "handlers[2].name: \"bad name\" may use only"));
  CHECK(any_contains(errors, "jetfan.yaml:20: handlers[2].colour: unknown key"));
  CHECK(any_contains(errors, "handlers[2].patterns: is required"));
  CHECK(errors.size() == 15);
}

TEST_CASE("missing sections are named", "[unit]") {
  const auto errors = errors_of("nats: {}\n");
  CHECK(any_contains(errors, "consumer: is required"));
  CHECK(any_contains(errors, "socket: is required"));
  CHECK(any_contains(errors, "handlers: is required"));
}

TEST_CASE("syntax errors, empty files and unknown top-level keys are errors", "[unit]") {
  CHECK(any_contains(errors_of("nats: [\n"), "jetfan.yaml:2: (syntax)"));
  CHECK(any_contains(errors_of(""), "the file is empty"));
  CHECK(any_contains(errors_of(std::string(kGood) + "handler:\n  - x\n"), "handler: unknown key"));
  CHECK(any_contains(errors_of("- a\n- b\n"), "expected a mapping"));
}

TEST_CASE("tls, heartbeat, delivery and log settings are checked", "[unit]") {
  const std::string base = kGood;
  CHECK(any_contains(errors_of(base + "delivery:\n  nak_delay: 5s\n  nak_delay_max: 1s\n"),
                     "delivery.nak_delay_max: must not be less"));
  CHECK(any_contains(errors_of(base + "log:\n  level: loud\n"), "log.level: \"loud\""));
  CHECK(any_contains(errors_of(base + "log:\n  format: xml\n"), "log.format: \"xml\" must be text or json"));
  CHECK(load_config_text(base + "log:\n  format: json\n", "x.yaml").config->log_format == jetfan::LogFormat::kJson);
  auto with_nats = [&](const std::string& nats) {
    std::string text = base;
    text.replace(0, text.find("consumer:"), nats);
    return errors_of(text);
  };
  CHECK(any_contains(with_nats("nats:\n  tls: {cert: a.pem}\n"), "cert and key go together"));
  CHECK(any_contains(with_nats("nats:\n  tls: {ca: a, foo: b}\n"), "nats.tls.foo: unknown key"));
  CHECK(any_contains(with_nats("nats:\n  connect_timeout: soon\n"), "nats.connect_timeout"));
  CHECK(errors_of(base + "delivery:\n  drain_timeout: 2s\n  remember: 10\n").empty());
  std::string consumer = base;
  consumer.insert(consumer.find("key:"), "  idle_heartbeat: 20s\n");
  CHECK(any_contains(errors_of(consumer), "consumer.idle_heartbeat: must be at least 100ms"));
}

TEST_CASE("ack_policy and max_held are read", "[unit]") {
  std::string text = kGood;
  text.insert(text.find("key:"), "  ack_policy: all\n  max_held: 500\n  batch: 32\n");
  const auto result = load_config_text(text, "x.yaml");
  REQUIRE(result.errors.empty());
  CHECK(result.config->consumer.ack_policy == jetfan::AckPolicy::kAll);
  CHECK(result.config->consumer.max_held == 500);
  CHECK(result.config->consumer.batch == 32);
}

TEST_CASE("the annotated example config in the repository is valid", "[unit]") {
  const auto result = jetfan::load_config_file(JETFAN_EXAMPLE_CONFIG);
  CHECK(result.errors == std::vector<std::string>{});
  REQUIRE(result.config);
  CHECK(result.config->handlers.size() == 2);
}

TEST_CASE("an error about a key left at its default points at its section, not a crash", "[unit]") {
  std::string text = kGood;
  text.insert(text.find("key:"), "  pull_expires: 1s\n");  // the default idle_heartbeat (1s) is too long
  const auto errors = errors_of(text);
  CHECK(any_contains(errors, "jetfan.yaml:4: consumer.idle_heartbeat: must be at least 100ms"));
}

TEST_CASE("inputs the fuzzer found are reported, not crashed on", "[unit]") {
  for (const auto& entry : std::filesystem::directory_iterator(JETFAN_FUZZ_REGRESSIONS)) {
    INFO(entry.path());
    CHECK_NOTHROW(jetfan::load_config_file(entry.path().string()));
  }
}

TEST_CASE("a key given twice is an error naming both lines", "[unit]") {
  const std::string text = std::string(kGood) + "consumer:\n  stream: OTHER\n  durable: x\n";
  const std::size_t line = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) - 2;
  CHECK(any_contains(errors_of(text), "jetfan.yaml:" + std::to_string(line) +
                                          ": consumer: is given twice, on lines 3 and " + std::to_string(line)));
  CHECK(any_contains(errors_of("socket: {path: /a, path: /b}\n"), "socket.path: is given twice"));
}

TEST_CASE("socket paths, modes, prefixes and server URLs that cannot work are errors", "[unit]") {
  auto with = [](const std::string& from, const std::string& to) {
    std::string text = kGood;
    text.replace(text.find(from), from.size(), to);
    return errors_of(text);
  };
  CHECK(any_contains(with("path: /run/jetfan/builder.sock", "path: run/builder.sock"),
                     "socket.path: \"run/builder.sock\" must be an absolute path"));
  CHECK(any_contains(with("mode: \"0660\"", "mode: \"0066\""), "socket.mode: \"0066\" locks out the socket's owner"));
  CHECK(any_contains(with("mode: \"0660\"", "mode: \"0460\""), "locks out the socket's owner"));
  CHECK(any_contains(with("strip_prefix: \"events.\"", "strip_prefix: \"events.*.\""),
                     "key.strip_prefix: \"events.*.\" must be a literal subject prefix"));
  CHECK(any_contains(with("strip_prefix: \"events.\"", "strip_prefix: \"events.>\""), "no wildcards"));
  for (const char* bad : {"http://127.0.0.1:4222", "127.0.0.1:4222", "nats://", "nats://host:99999", "nats://host:x",
                          "nats://host/path"}) {
    INFO(bad);
    CHECK(any_contains(with("nats://127.0.0.1:4222", bad), "nats.servers[0]: \"" + std::string(bad) + "\""));
  }
  for (const char* good : {"nats://n1:4222", "tls://n1.example.com:4443", "ws://n1", "wss://u:p@n1:443",
                           "nats://[::1]:4222", "nats://token@127.0.0.1"}) {
    INFO(good);
    CHECK(with("nats://127.0.0.1:4222", good).empty());
  }
}

TEST_CASE("parsing keeps user and group names as written, and resolve_accounts makes them ids", "[unit]") {
  std::string text = kGood;
  text.insert(text.find("  - name: audit"),
              "    allow: {users: [builder-user, \"1000\"], groups: [builders], uids: [4321], gids: [99]}\n"
              "    max_instances: 2\n    when_full: hand_back\n");
  text.insert(text.find("handlers:"),
              "  owner: builder-user\n  group: \"0\"\n  max_connections: 10\n  max_unidentified: 3\n"
              "  max_output_buffer: 256KiB\n  idle_timeout: 30s\n  ping_timeout: 5s\n");
  auto loaded = load_config_text(text, "x.yaml");
  REQUIRE(loaded.errors.empty());
  auto& config = *loaded.config;
  const auto& builder = config.handlers[0];
  CHECK(builder.allow.users == std::vector<AccountName>{{"builder-user", "x.yaml:23: handlers[0].allow.users[0]"},
                                                        {"1000", "x.yaml:23: handlers[0].allow.users[1]"}});
  CHECK(builder.allow.groups == std::vector<AccountName>{{"builders", "x.yaml:23: handlers[0].allow.groups[0]"}});
  CHECK(builder.allow.uids == std::vector<uid_t>{4321});
  CHECK(builder.max_instances == 2);
  CHECK(builder.when_full == jetfan::WhenFull::kHandBack);
  CHECK(config.handlers[1].when_full == jetfan::WhenFull::kHold);
  CHECK(config.handlers[1].allow.empty());
  CHECK(config.socket.owner_name == AccountName{"builder-user", "x.yaml:11: socket.owner"});
  CHECK_FALSE(config.socket.owner);
  CHECK(config.socket.max_connections == 10);
  CHECK(config.socket.max_unidentified == 3);
  CHECK(config.socket.max_output_buffer == 256 * 1024);
  CHECK(config.socket.idle_timeout == std::chrono::seconds(30));

  // A lookup of this test's own: resolving asks nothing of the machine but `lookup`.
  const AccountLookup lookup{
      [](const std::string& name) { return name == "builder-user" ? std::optional<uid_t>(2001) : std::nullopt; },
      [](const std::string& name) { return name == "builders" ? std::optional<gid_t>(3001) : std::nullopt; }};
  std::vector<std::string> errors;
  resolve_accounts(config, errors, lookup);
  CHECK(errors.empty());
  CHECK(builder.allow.uids == std::vector<uid_t>{2001, 1000, 4321});
  CHECK(builder.allow.gids == std::vector<gid_t>{3001, 99});
  CHECK(builder.allow.users.empty());
  CHECK(builder.allow.groups.empty());
  CHECK(config.socket.owner == 2001u);
  CHECK(config.socket.group == 0u);
  CHECK_FALSE(config.socket.owner_name);

  std::string empty = kGood;
  empty.insert(empty.find("  - name: audit"), "    allow: {}\n");
  CHECK(any_contains(errors_of(empty), "lists no one"));
}

TEST_CASE("a config file loads with its user and group names resolved on this machine, each unknown one named",
          "[unit]") {
  const auto load = [](const std::string& text) {
    const auto path = std::filesystem::temp_directory_path() / ("jetfan-config-test-" + std::to_string(::getpid()));
    std::ofstream(path) << text;
    auto result = jetfan::load_config_file(path.string());
    std::filesystem::remove(path);
    return result;
  };
  std::string text = kGood;
  text.insert(text.find("  - name: audit"), "    allow: {users: [root], groups: [root], uids: [4321], gids: [99]}\n");
  text.insert(text.find("handlers:"), "  owner: root\n  group: \"0\"\n");
  const auto loaded = load(text);
  REQUIRE(loaded.errors.empty());
  CHECK(loaded.config->handlers[0].allow.uids == std::vector<uid_t>{0, 4321});
  CHECK(loaded.config->handlers[0].allow.gids == std::vector<gid_t>{0, 99});
  CHECK(loaded.config->socket.owner == 0u);
  CHECK(loaded.config->socket.group == 0u);

  // Reported with the other errors of the file, not after they are fixed.
  std::string unknown = kGood;
  unknown.insert(unknown.find("  - name: audit"),
                 "    allow: {users: [no-such-user-here, \"4294967296\", \"99999999999999999999\"], "
                 "groups: [no-such-group]}\n    when_full: sometimes\n");
  const auto errors = load(unknown).errors;
  CHECK(
      any_contains(errors, ":16: handlers[0].allow.users[0]: there is no user \"no-such-user-here\" on this machine"));
  CHECK(any_contains(errors, "handlers[0].allow.groups[0]: there is no group \"no-such-group\""));
  // Digits past a uid_t are no id: no user 0 (root) by wrapping around, no crash.
  CHECK(any_contains(errors, "handlers[0].allow.users[1]: there is no user \"4294967296\""));
  CHECK(any_contains(errors, "handlers[0].allow.users[2]: there is no user \"99999999999999999999\""));
  CHECK(any_contains(errors, "handlers[0].when_full: \"sometimes\" must be hold or hand_back"));
}

TEST_CASE("a handler whose READY line would be longer than a client accepts is refused at load", "[unit]") {
  // 260 patterns of the form p001. followed by 60 x: about 17,500 bytes of READY.
  std::string patterns;
  for (int i = 1; i <= 260; ++i) {
    char name[8];
    std::snprintf(name, sizeof name, "p%03d.", i);
    patterns += std::string(patterns.empty() ? "" : ", ") + "\"" + name + std::string(60, 'x') + "\"";
  }
  std::string text = kGood;
  text.insert(text.find("  - name: audit"), "  - name: many\n    patterns: [" + patterns + "]\n");
  CHECK(any_contains(errors_of(text), "handlers[1].patterns: announcing these patterns takes a READY line of"));
  // Sixty of them fit.
  std::string fewer;
  for (int i = 1; i <= 60; ++i) {
    char name[8];
    std::snprintf(name, sizeof name, "p%03d.", i);
    fewer += std::string(fewer.empty() ? "" : ", ") + "\"" + name + std::string(60, 'x') + "\"";
  }
  std::string ok = kGood;
  ok.insert(ok.find("  - name: audit"), "  - name: many\n    patterns: [" + fewer + "]\n");
  CHECK(errors_of(ok).empty());
}

TEST_CASE("token_file and password_file stand for token and password, and not beside them", "[unit]") {
  const std::string base =
      "consumer:\n  stream: S\n  durable: d\nsocket:\n  path: /tmp/x.sock\n"
      "handlers:\n  - name: h\n    patterns: [\"#\"]\n";
  auto with = [&](const std::string& nats) {
    return load_config_text("nats:\n  servers: [\"nats://127.0.0.1:4222\"]\n" + nats + base, "jetfan.yaml");
  };
  const auto token = with("  token_file: /etc/jetfan/token\n");
  REQUIRE(token.config);
  CHECK(token.config->nats.token_file == "/etc/jetfan/token");
  CHECK(token.config->nats.token.empty());  // read when jetfan connects, never kept here
  const auto password = with("  user: builder\n  password_file: ${CREDENTIALS_DIRECTORY}/nats-password\n");
  REQUIRE(password.config);
  CHECK(password.config->nats.password_file == "${CREDENTIALS_DIRECTORY}/nats-password");

  CHECK(
      any_contains(with("  token: t\n  token_file: /t\n").errors, "nats.token_file: give either token or token_file"));
  CHECK(any_contains(with("  user: u\n  password: p\n  password_file: /p\n").errors,
                     "nats.password_file: give either password or password_file"));
  CHECK(any_contains(with("  password_file: /p\n").errors, "nats.user: is required with nats.password_file"));
  CHECK(any_contains(with("  user: u\n").errors, "nats.password: is required with nats.user (or nats.password_file)"));
  CHECK(any_contains(with("  token_file: /t\n  user: u\n  password_file: /p\n").errors, "nats: give only one of"));
}

TEST_CASE("order_by is key, token:N or header:NAME, and anything else is refused with where and what is allowed",
          "[unit]") {
  using jetfan::OrderBy;
  std::string text = kGood;
  text.insert(text.find("  - name: audit"), "    order_by: token:2\n");
  text += "    order_by: header:Entity-Id\n";
  auto loaded = load_config_text(text, "x.yaml");
  REQUIRE(loaded.errors.empty());
  CHECK(loaded.config->handlers[0].order_by == OrderBy{OrderBy::Kind::kToken, 2, ""});
  CHECK(loaded.config->handlers[1].order_by == OrderBy{OrderBy::Kind::kHeader, 0, "Entity-Id"});
  CHECK(to_string(loaded.config->handlers[0].order_by) == "token:2");
  CHECK(jetfan::parse_order_by("key") == OrderBy{OrderBy::Kind::kKey, 0, ""});
  CHECK(load_config_text(kGood, "x.yaml").config->handlers[0].order_by.kind == OrderBy::Kind::kNone);

  for (const char* bad :
       {"keys", "token:0", "token:", "token:x", "token:1000", "header:", "header:a b", "header:a:b", "", "token:-1"}) {
    INFO(bad);
    std::string wrong = kGood;
    wrong.insert(wrong.find("  - name: audit"), std::string("    order_by: \"") + bad + "\"\n");
    const auto errors = load_config_text(wrong, "x.yaml").errors;
    CHECK(any_contains(errors, "x.yaml:16: handlers[0].order_by: \"" + std::string(bad) +
                                   "\" must be key (the message key), token:N"));
  }
}

TEST_CASE("a handler's retry budget, dead letter and pause are read and checked", "[unit]") {
  std::string text = kGood;
  text.insert(text.find("  - name: audit"),
              "    retry: {max_attempts: 5, backoff: 2s, backoff_max: 1m}\n"
              "    dead_letter: {subject: dlq.node1_builder.builder}\n"
              "    paused: true\n");
  const auto result = load_config_text(text, "x.yaml");
  REQUIRE(result.errors.empty());
  const auto& builder = result.config->handlers[0];
  REQUIRE(builder.retry);
  CHECK(builder.retry->max_attempts == 5);
  CHECK(builder.retry->backoff == std::chrono::milliseconds(2000));
  CHECK(builder.retry->backoff_max == std::chrono::milliseconds(60000));
  CHECK(builder.dead_letter_subject == "dlq.node1_builder.builder");
  CHECK(builder.paused);
  const auto& audit = result.config->handlers[1];
  CHECK_FALSE(audit.retry);
  CHECK(audit.dead_letter_subject.empty());
  CHECK_FALSE(audit.paused);

  auto with = [&](const std::string& lines) {
    std::string bad = kGood;
    bad.insert(bad.find("  - name: audit"), lines);
    return errors_of(bad);
  };
  CHECK(
      any_contains(with("    retry: {max_attempts: -1}\n"),
                   "jetfan.yaml:16: handlers[0].retry.max_attempts: \"-1\" must be a whole number from 0 to 1000000"));
  CHECK(any_contains(with("    retry: {tries: 3}\n"),
                     "handlers[0].retry.tries: unknown key (expected one of: max_attempts, backoff, backoff_max)"));
  CHECK(any_contains(with("    retry: {backoff: 5s, backoff_max: 1s}\n"),
                     "handlers[0].retry.backoff_max: must not be less than handlers[0].retry.backoff (5000ms)"));
  CHECK(any_contains(with("    retry: {backoff: 0s}\n"), "handlers[0].retry.backoff: must be more than 0"));
  CHECK(any_contains(with("    dead_letter: {}\n"), "handlers[0].dead_letter.subject: is required"));
  CHECK(any_contains(with("    dead_letter: {subject: \"dlq.*\"}\n"), "\"dlq.*\" is not a subject to publish to"));
  CHECK(any_contains(with("    dead_letter: {subject: \"dlq..x\"}\n"), "is not a subject to publish to"));
  CHECK(any_contains(with("    paused: maybe\n"), "handlers[0].paused: \"maybe\" must be true or false"));
}

TEST_CASE("a handler's publish: subjects it may publish to, and its bounds, are read and checked", "[unit]") {
  std::string text = kGood;
  text.insert(text.find("  - name: audit"),
              "    publish:\n      subjects: [out.built, \"audit.*.>\"]\n      max_in_flight: 32\n"
              "      max_bytes: 2MiB\n      timeout: 3s\n");
  const auto result = load_config_text(text, "x.yaml");
  REQUIRE(result.errors.empty());
  const auto& builder = result.config->handlers[0];
  REQUIRE(builder.publish);
  CHECK(builder.publish->subjects == std::vector<std::string>{"out.built", "audit.*.>"});
  CHECK(builder.publish->max_in_flight == 32);
  CHECK(builder.publish->max_bytes == 2u << 20);
  CHECK(builder.publish->timeout == std::chrono::milliseconds(3000));
  CHECK_FALSE(result.config->handlers[1].publish);  // none: it may not publish

  std::string minimal = kGood;
  minimal.insert(minimal.find("  - name: audit"), "    publish: {subjects: [\">\"]}\n");
  const auto defaults = load_config_text(minimal, "x.yaml");
  REQUIRE(defaults.errors.empty());
  CHECK(defaults.config->handlers[0].publish->max_in_flight == 256);
  CHECK(defaults.config->handlers[0].publish->max_bytes == 8u << 20);
  CHECK(defaults.config->handlers[0].publish->timeout == std::chrono::milliseconds(10000));

  auto with = [&](const std::string& lines) {
    std::string bad = kGood;
    bad.insert(bad.find("  - name: audit"), lines);
    return errors_of(bad);
  };
  CHECK(any_contains(with("    publish: {}\n"), "handlers[0].publish.subjects: is required"));
  CHECK(any_contains(with("    publish: {subjects: []}\n"), "handlers[0].publish.subjects: needs at least one"));
  CHECK(any_contains(with("    publish: {subjects: [\"a.>.b\"]}\n"),
                     "handlers[0].publish.subjects[0]: \"a.>.b\" has '>' before its last token"));
  CHECK(any_contains(with("    publish: {subjects: [a, \"b*\"]}\n"),
                     "handlers[0].publish.subjects[1]: \"b*\" has '*' or '>' inside a token"));
  CHECK(any_contains(with("    publish: {subjects: [a], max_in_flight: 0}\n"),
                     "handlers[0].publish.max_in_flight: \"0\" must be a whole number from 1"));
  CHECK(any_contains(with("    publish: {subjects: [a], timeout: 0s}\n"),
                     "handlers[0].publish.timeout: must be more than 0"));
  CHECK(any_contains(
      with("    publish: {subjects: [a], to: [b]}\n"),
      "handlers[0].publish.to: unknown key (expected one of: subjects, max_in_flight, max_bytes, timeout)"));
}

TEST_CASE(
    "control.allow and control.allow_read say who may change and who may only read and a mode others may "
    "write needs one of them",
    "[unit]") {
  const std::string base = kGood;
  auto loaded = load_config_text(base +
                                     "control:\n  mode: \"0666\"\n  allow: {users: [ops], uids: [7]}\n"
                                     "  allow_read: {groups: [monitoring]}\n",
                                 "c.yaml");
  REQUIRE(loaded.errors.empty());
  auto& config = *loaded.config;
  CHECK(config.control.mode == 0666);
  CHECK(config.control.allow.uids == std::vector<uid_t>{7});
  const AccountLookup lookup{
      [](const std::string& name) { return name == "ops" ? std::optional<uid_t>(2001) : std::nullopt; },
      [](const std::string& name) { return name == "monitoring" ? std::optional<gid_t>(3001) : std::nullopt; }};
  std::vector<std::string> errors;
  resolve_accounts(config, errors, lookup);
  CHECK(errors.empty());
  CHECK(config.control.allow.uids == std::vector<uid_t>{2001, 7});
  CHECK(config.control.allow_read.gids == std::vector<gid_t>{3001});

  const auto open = errors_of(base + "control:\n  mode: \"0666\"\n");
  REQUIRE(open.size() == 1);
  CHECK_THAT(open[0], Catch::Contains("control.mode: \"0666\" lets every local user connect") &&
                          Catch::Contains("control.allow"));
  CHECK(errors_of(base + "control:\n  mode: \"0660\"\n").empty());
  CHECK(any_contains(errors_of(base + "control:\n  allow: {}\n"), "control.allow: lists no one"));
}

TEST_CASE("metrics.max_connections: default 32, at least 1", "[unit]") {
  const std::string base = kGood;
  auto loaded = load_config_text(base + "metrics:\n  listen: 9464\n", "m.yaml");
  REQUIRE(loaded.errors.empty());
  CHECK(loaded.config->metrics->max_connections == 32);
  loaded = load_config_text(base + "metrics:\n  listen: 9464\n  max_connections: 4\n", "m.yaml");
  REQUIRE(loaded.errors.empty());
  CHECK(loaded.config->metrics->max_connections == 4);
  CHECK(any_contains(errors_of(base + "metrics:\n  listen: 9464\n  max_connections: 0\n"), "metrics.max_connections"));
}

TEST_CASE("handlers[].adaptive_inflight and min_inflight: a floor within max_inflight, and only for an adaptive limit",
          "[unit]") {
  const auto with = [](const std::string& keys) {
    std::string text = kGood;
    text.replace(text.find("ack_timeout: 30s"), 16, "ack_timeout: 30s\n    " + keys);
    return text;
  };
  const auto loaded = load_config_text(with("adaptive_inflight: true\n    min_inflight: 4"), "a.yaml");
  REQUIRE(loaded.errors.empty());
  CHECK(loaded.config->handlers[0].adaptive_inflight);
  CHECK(loaded.config->handlers[0].min_inflight == 4);
  CHECK_FALSE(loaded.config->handlers[1].adaptive_inflight);
  const auto defaulted = load_config_text(with("adaptive_inflight: true"), "a.yaml");
  REQUIRE(defaulted.errors.empty());
  CHECK(defaulted.config->handlers[0].min_inflight == 1);

  const auto one_error = [](const std::string& text) {
    const auto errors = errors_of(text);
    REQUIRE(errors.size() == 1);
    return errors[0];
  };
  CHECK_THAT(one_error(with("min_inflight: 4")),
             Catch::Contains("min_inflight") && Catch::Contains("it needs adaptive_inflight: true"));
  CHECK_THAT(one_error(with("adaptive_inflight: true\n    min_inflight: 65")),
             Catch::Contains("min_inflight") && Catch::Contains("65 is above max_inflight (64)"));
  CHECK_THAT(one_error(with("adaptive_inflight: yes")),
             Catch::Contains("adaptive_inflight: \"yes\" must be true or false"));
  CHECK_THAT(one_error(with("adaptive_inflight: true\n    min_inflight: 0")),
             Catch::Contains("min_inflight: \"0\" must be a whole number from 1 to 65536"));
}

TEST_CASE("handlers[].max_rate: messages a second above 0, fractions too, and a refusal says what is wrong", "[unit]") {
  const auto with_rate = [](const std::string& rate) {
    std::string text = kGood;
    text.replace(text.find("ack_timeout: 30s"), 16, "ack_timeout: 30s\n    max_rate: " + rate);
    return text;
  };
  const auto loaded = load_config_text(with_rate("0.5"), "r.yaml");
  REQUIRE(loaded.errors.empty());
  CHECK(loaded.config->handlers[0].max_rate == 0.5);
  CHECK(loaded.config->handlers[1].max_rate == 0);  // none
  for (const std::string bad : {"0", "-1", "fast", "20/s", "2000000", "nan", "0.0009", "1e-300"}) {
    INFO(bad);
    const auto errors = errors_of(with_rate(bad));
    REQUIRE(errors.size() == 1);
    CHECK_THAT(errors[0],
               Catch::Contains("max_rate: \"" + bad + "\" must be a number of messages a second from 0.001 to"));
  }
}

TEST_CASE("durations and sizes as NATS writes them load, and a refusal says what is wrong", "[unit]") {
  std::string text = kGood;
  text.replace(text.find("ack_timeout: 30s"), 16, "ack_timeout: 1m30s");
  text.replace(text.find("  durable: node1_builder\n"), 25, "  durable: node1_builder\n  max_held_bytes: 32MB\n");
  const auto loaded = load_config_text(text, "d.yaml");
  REQUIRE(loaded.errors.empty());
  CHECK(loaded.config->handlers[0].ack_timeout == std::chrono::seconds(90));
  CHECK(loaded.config->consumer.max_held_bytes == 32u * 1024 * 1024);

  std::string upper = kGood;
  upper.replace(upper.find("ack_timeout: 30s"), 16, "ack_timeout: 30S");
  const auto errors = errors_of(upper);
  REQUIRE(errors.size() == 1);
  CHECK_THAT(errors[0], Catch::Contains("\"30S\" is not a duration (") && Catch::Contains("lower case"));
}

TEST_CASE("tracing: off unless given, and only an endpoint is required", "[unit]") {
  const std::string base = kGood;
  auto loaded = load_config_text(base, "t.yaml");
  REQUIRE(loaded.errors.empty());
  CHECK_FALSE(loaded.config->tracing);
  loaded = load_config_text(base + "tracing:\n  endpoint: http://127.0.0.1:4318/v1/traces\n", "t.yaml");
  REQUIRE(loaded.errors.empty());
  REQUIRE(loaded.config->tracing);
  const auto& tracing = *loaded.config->tracing;
  CHECK(tracing.endpoint == "http://127.0.0.1:4318/v1/traces");
  CHECK(tracing.sample_ratio == 1.0);
  CHECK(tracing.service_name == "jetfan");
  CHECK(tracing.max_queued == jetfan::defaults::kTracingMaxQueued);
  CHECK(tracing.max_batch == jetfan::defaults::kTracingMaxBatch);
  CHECK(tracing.interval == jetfan::defaults::kTracingInterval);
  CHECK(tracing.request_timeout == jetfan::defaults::kTracingRequestTimeout);
  // The default batch is never more than a smaller queue.
  loaded = load_config_text(base + "tracing:\n  endpoint: http://c\n  max_queued: 100\n", "t.yaml");
  REQUIRE(loaded.errors.empty());
  CHECK(loaded.config->tracing->max_batch == 100);
}

TEST_CASE("tracing: every key is read", "[unit]") {
  const auto loaded = load_config_text(std::string(kGood) +
                                           "tracing:\n"
                                           "  endpoint: http://[::1]:4318/v1/traces\n"
                                           "  sample_ratio: 0.1\n"
                                           "  service_name: orders\n"
                                           "  max_queued: 4096\n"
                                           "  max_batch: 4096\n"
                                           "  interval: 1m30s\n"
                                           "  request_timeout: 250ms\n",
                                       "t.yaml");
  REQUIRE(loaded.errors.empty());
  const auto& tracing = *loaded.config->tracing;
  CHECK(tracing.endpoint == "http://[::1]:4318/v1/traces");
  CHECK(tracing.sample_ratio == 0.1);
  CHECK(tracing.service_name == "orders");
  CHECK(tracing.max_queued == 4096);
  CHECK(tracing.max_batch == 4096);
  CHECK(tracing.interval == jetfan::Duration(90'000));
  CHECK(tracing.request_timeout == jetfan::Duration(250));
  for (const std::string ratio : {"0", "1", "0.5", "1e-3"}) {
    INFO(ratio);
    CHECK(errors_of(std::string(kGood) + "tracing:\n  endpoint: http://c\n  sample_ratio: " + ratio + "\n").empty());
  }
  for (const std::string endpoint : {"http://collector", "http://collector:4318", "http://10.0.0.1:4318/v1/traces",
                                     "http://[::1]", "http://c?x=1", "http://c/"}) {
    INFO(endpoint);
    CHECK(errors_of(std::string(kGood) + "tracing:\n  endpoint: \"" + endpoint + "\"\n").empty());
  }
}

TEST_CASE("tracing.endpoint: http only, with a host, a port from 1 to 65535 and no user info", "[unit]") {
  const auto one_error = [](const std::string& section) {
    const auto errors = errors_of(std::string(kGood) + section);
    REQUIRE(errors.size() == 1);
    return errors[0];
  };
  const auto endpoint = [&](const std::string& url) { return one_error("tracing:\n  endpoint: \"" + url + "\"\n"); };
  // kGood has 17 lines: tracing: is line 18, its first key is on line 19.
  CHECK(
      endpoint("https://collector:4318") ==
      "jetfan.yaml:19: tracing.endpoint: \"https://collector:4318\" uses https://, but jetfan does not speak TLS to a "
      "collector: send to a local OpenTelemetry Collector over http:// (it can forward with TLS)");
  // A missing key is reported where its section's keys start.
  CHECK(one_error("tracing:\n  sample_ratio: 0.5\n") == "jetfan.yaml:19: tracing.endpoint: is required");
  CHECK(endpoint("") == "jetfan.yaml:19: tracing.endpoint: cannot be empty");
  CHECK_THAT(endpoint("collector:4318"),
             Catch::Contains("tracing.endpoint: \"collector:4318\" must start with http://"));
  CHECK_THAT(endpoint("grpc://collector:4317"), Catch::Contains("must start with http://"));
  for (const std::string url : {"http://", "http:///v1/traces", "http://:4318", "http://[]:4318", "http://?x"}) {
    INFO(url);
    CHECK_THAT(endpoint(url), Catch::Contains("tracing.endpoint: \"" + url + "\" names no host"));
  }
  for (const std::string port : {"0", "65536", "x", "", "-1", "4318x"}) {
    INFO(port);
    CHECK_THAT(endpoint("http://collector:" + port + "/v1/traces"),
               Catch::Contains("has port \"" + port + "\"; it must be a number from 1 to 65535"));
    CHECK_THAT(endpoint("http://[::1]:" + port), Catch::Contains("has port \"" + port + "\""));
  }
  CHECK_THAT(endpoint("http://user:secret@collector:4318"),
             Catch::Contains("tracing.endpoint: \"http://user:secret@collector:4318\" has user info"));
  CHECK_THAT(endpoint("http://user@collector"), Catch::Contains("has user info"));
  CHECK(errors_of(std::string(kGood) + "tracing:\n  endpoint: http://collector/a@b\n").empty());  // '@' in the path
  CHECK_THAT(endpoint("http://::1:4318"), Catch::Contains("IPv6 address not in brackets"));
  CHECK_THAT(endpoint("http://[::1:4318"), Catch::Contains("unclosed '['"));
  CHECK_THAT(endpoint("http://[::1]x"), Catch::Contains("something other than :port"));
  CHECK_THAT(endpoint("http://collector /v1"), Catch::Contains("white space"));
}

TEST_CASE("tracing: sample_ratio, service_name, max_queued, max_batch and the durations are checked", "[unit]") {
  const auto one_error = [](const std::string& keys) {
    const auto errors = errors_of(std::string(kGood) + "tracing:\n  endpoint: http://c\n" + keys);
    REQUIRE(errors.size() == 1);
    return errors[0];
  };
  for (const std::string ratio : {"-0.1", "1.5", "half", "50%", "nan", "inf", "1e9"}) {
    INFO(ratio);
    CHECK(one_error("  sample_ratio: " + ratio + "\n") ==
          "jetfan.yaml:20: tracing.sample_ratio: \"" + ratio +
              "\" must be a number from 0 to 1: the share of messages traced (e.g. 0.1)");
  }
  CHECK(one_error("  service_name: \"\"\n") == "jetfan.yaml:20: tracing.service_name: cannot be empty");
  CHECK(one_error("  max_queued: 0\n") ==
        "jetfan.yaml:20: tracing.max_queued: \"0\" must be a whole number from 1 to 1000000");
  CHECK_THAT(one_error("  max_queued: 1000001\n"), Catch::Contains("tracing.max_queued: \"1000001\" must be"));
  CHECK_THAT(one_error("  max_batch: 0\n"), Catch::Contains("tracing.max_batch: \"0\" must be a whole number from 1"));
  CHECK(one_error("  max_batch: 2049\n") ==
        "jetfan.yaml:20: tracing.max_batch: 2049 is above max_queued (2048): a batch is taken from the spans queued");
  CHECK_THAT(one_error("  max_queued: 10\n  max_batch: 11\n"),
             Catch::Contains("tracing.max_batch: 11 is above max_queued (10)"));
  CHECK(one_error("  interval: 99ms\n") == "jetfan.yaml:20: tracing.interval: \"99ms\" must be from 100ms to 1h");
  CHECK_THAT(one_error("  interval: 61m\n"), Catch::Contains("tracing.interval: \"61m\" must be from 100ms to 1h"));
  CHECK_THAT(one_error("  interval: 5\n"), Catch::Contains("tracing.interval: \"5\" is not a duration"));
  CHECK(one_error("  request_timeout: 50ms\n") ==
        "jetfan.yaml:20: tracing.request_timeout: \"50ms\" must be from 100ms to 60s");
  CHECK_THAT(one_error("  request_timeout: 61s\n"),
             Catch::Contains("tracing.request_timeout: \"61s\" must be from 100ms to 60s"));
  CHECK(errors_of(std::string(kGood) + "tracing:\n  endpoint: http://c\n  interval: 1h\n  request_timeout: 1m\n")
            .empty());
}

TEST_CASE("tracing: an unknown key is refused with the keys the section has", "[unit]") {
  const auto errors = errors_of(std::string(kGood) + "tracing:\n  endpoint: http://c\n  sampling: 0.5\n");
  REQUIRE(errors.size() == 1);
  CHECK(errors[0] ==
        "jetfan.yaml:20: tracing.sampling: unknown key (expected one of: endpoint, sample_ratio, service_name, "
        "max_queued, max_batch, interval, request_timeout)");
  CHECK_THAT(errors_of(std::string(kGood) + "tracing: http://c\n")[0],
             Catch::Contains("tracing: expected a mapping of keys to values"));
}

TEST_CASE("the example config's commented-out tracing block loads once uncommented, with every default", "[unit]") {
  std::ifstream in(JETFAN_EXAMPLE_CONFIG);
  REQUIRE(in);
  std::string block;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    inside = line.starts_with("# tracing:") || (inside && line.starts_with("#   "));
    if (inside) block += line.substr(2) + "\n";
  }
  REQUIRE_THAT(block, Catch::Contains("endpoint:") && Catch::Contains("request_timeout:"));
  const auto loaded = load_config_text(std::string(kGood) + block, "example.yaml");
  REQUIRE(loaded.errors == std::vector<std::string>{});
  REQUIRE(loaded.config->tracing);
  const jetfan::TracingSettings defaults;
  CHECK(loaded.config->tracing->sample_ratio == defaults.sample_ratio);
  CHECK(loaded.config->tracing->service_name == defaults.service_name);
  CHECK(loaded.config->tracing->max_queued == defaults.max_queued);
  CHECK(loaded.config->tracing->max_batch == defaults.max_batch);
  CHECK(loaded.config->tracing->interval == defaults.interval);
  CHECK(loaded.config->tracing->request_timeout == defaults.request_timeout);
}

TEST_CASE("ledger: off unless given, and only a bucket is required", "[unit]") {
  const std::string base = kGood;
  auto loaded = load_config_text(base, "t.yaml");
  REQUIRE(loaded.errors.empty());
  CHECK_FALSE(loaded.config->ledger);
  loaded = load_config_text(base + "ledger:\n  bucket: jetfan_confirmations\n", "t.yaml");
  REQUIRE(loaded.errors.empty());
  REQUIRE(loaded.config->ledger);
  const auto& ledger = *loaded.config->ledger;
  CHECK(ledger.bucket == "jetfan_confirmations");
  CHECK(ledger.interval == jetfan::defaults::kLedgerInterval);
  CHECK(ledger.interval == jetfan::Duration(1000));
  CHECK(ledger.max_records == jetfan::defaults::kLedgerMaxRecords);
  CHECK(ledger.max_records == 100'000);
  CHECK(ledger.max_in_flight == jetfan::defaults::kLedgerMaxInFlight);
  CHECK(ledger.max_in_flight == 64);
}

TEST_CASE("ledger: every key is read, each bound included", "[unit]") {
  const auto loaded = load_config_text(std::string(kGood) +
                                           "ledger:\n"
                                           "  bucket: Jet-fan_2\n"
                                           "  interval: 1m30s\n"
                                           "  max_records: 5000\n"
                                           "  max_in_flight: 8\n",
                                       "t.yaml");
  REQUIRE(loaded.errors.empty());
  const auto& ledger = *loaded.config->ledger;
  CHECK(ledger.bucket == "Jet-fan_2");
  CHECK(ledger.interval == jetfan::Duration(90'000));
  CHECK(ledger.max_records == 5000);
  CHECK(ledger.max_in_flight == 8);
  const std::string low = "ledger:\n  bucket: b\n  interval: 100ms\n  max_records: 1\n  max_in_flight: 1\n";
  const std::string high = "ledger:\n  bucket: b\n  interval: 1h\n  max_records: 10000000\n  max_in_flight: 4096\n";
  CHECK(errors_of(std::string(kGood) + low).empty());
  CHECK(errors_of(std::string(kGood) + high).empty());
}

TEST_CASE("ledger.bucket: required, not empty, and a key-value bucket's name", "[unit]") {
  const auto one_error = [](const std::string& section) {
    const auto errors = errors_of(std::string(kGood) + section);
    REQUIRE(errors.size() == 1);
    return errors[0];
  };
  // kGood has 17 lines: ledger: is line 18, its first key is on line 19.
  CHECK(one_error("ledger:\n  interval: 2s\n") == "jetfan.yaml:19: ledger.bucket: is required");
  CHECK(one_error("ledger:\n  bucket: \"\"\n") == "jetfan.yaml:19: ledger.bucket: cannot be empty");
  for (const std::string bucket : {"jetfan.confirmations", "jetfan confirmations", "KV_*", "a>", "ledger/b", "ü"}) {
    INFO(bucket);
    CHECK(one_error("ledger:\n  bucket: \"" + bucket + "\"\n") ==
          "jetfan.yaml:19: ledger.bucket: \"" + bucket +
              "\" is not a key-value bucket's name: letters, digits, '_' and '-' only");
  }
  CHECK_THAT(one_error("ledger:\n  bucket: [a, b]\n"), Catch::Contains("ledger.bucket: expected a single value"));
}

TEST_CASE("ledger: interval, max_records and max_in_flight are checked", "[unit]") {
  const auto one_error = [](const std::string& keys) {
    const auto errors = errors_of(std::string(kGood) + "ledger:\n  bucket: b\n" + keys);
    REQUIRE(errors.size() == 1);
    return errors[0];
  };
  CHECK(one_error("  interval: 99ms\n") == "jetfan.yaml:20: ledger.interval: \"99ms\" must be from 100ms to 1h");
  CHECK(one_error("  interval: 61m\n") == "jetfan.yaml:20: ledger.interval: \"61m\" must be from 100ms to 1h");
  CHECK_THAT(one_error("  interval: 5\n"), Catch::Contains("jetfan.yaml:20: ledger.interval: \"5\" is not a duration"));
  CHECK(one_error("  max_records: 0\n") ==
        "jetfan.yaml:20: ledger.max_records: \"0\" must be a whole number from 1 to 10000000");
  CHECK(one_error("  max_records: 10000001\n") ==
        "jetfan.yaml:20: ledger.max_records: \"10000001\" must be a whole number from 1 to 10000000");
  CHECK(one_error("  max_in_flight: 0\n") ==
        "jetfan.yaml:20: ledger.max_in_flight: \"0\" must be a whole number from 1 to 4096");
  CHECK(one_error("  max_in_flight: 4097\n") ==
        "jetfan.yaml:20: ledger.max_in_flight: \"4097\" must be a whole number from 1 to 4096");
  CHECK_THAT(one_error("  max_in_flight: many\n"), Catch::Contains("ledger.max_in_flight: \"many\" must be"));
}

TEST_CASE("ledger: an unknown key is refused with the keys the section has", "[unit]") {
  const auto errors = errors_of(std::string(kGood) + "ledger:\n  bucket: b\n  max_inflight: 8\n");
  REQUIRE(errors.size() == 1);
  CHECK(errors[0] ==
        "jetfan.yaml:20: ledger.max_inflight: unknown key (expected one of: bucket, interval, max_records, "
        "max_in_flight)");
  CHECK_THAT(errors_of(std::string(kGood) + "ledger: jetfan_confirmations\n")[0],
             Catch::Contains("ledger: expected a mapping of keys to values"));
  CHECK_THAT(errors_of(std::string(kGood) + "ledger:\n")[0],
             Catch::Contains("ledger: expected a mapping of keys to values"));
}

TEST_CASE("the example config's commented-out ledger block loads once uncommented, with every default", "[unit]") {
  std::ifstream in(JETFAN_EXAMPLE_CONFIG);
  REQUIRE(in);
  std::string block;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    inside = line.starts_with("# ledger:") || (inside && line.starts_with("#   "));
    if (inside) block += line.substr(2) + "\n";
  }
  REQUIRE_THAT(block, Catch::Contains("bucket:") && Catch::Contains("max_in_flight:"));
  const auto loaded = load_config_text(std::string(kGood) + block, "example.yaml");
  REQUIRE(loaded.errors == std::vector<std::string>{});
  REQUIRE(loaded.config->ledger);
  const jetfan::LedgerConfig defaults;
  CHECK(loaded.config->ledger->bucket == "jetfan_confirmations");
  CHECK(loaded.config->ledger->interval == defaults.interval);
  CHECK(loaded.config->ledger->max_records == defaults.max_records);
  CHECK(loaded.config->ledger->max_in_flight == defaults.max_in_flight);
}
