// Starting: one reader binding its consumer, an unreachable server, refused credentials, and the command
// line's config handling, against the real binary and a real nats-server.

#include <catch2/catch.hpp>

#include <csignal>
#include <cstdlib>
#include <fstream>

#include "mesh.hpp"

using namespace jetfan::testing;

namespace {
const std::string kBuilder = "  - name: builder\n    patterns: [\"a.>\"]\n";
}  // namespace

TEST_CASE("a missing consumer stops jetfan with status 78, naming the stream and the durable", "[integration]") {
  Mesh mesh({.create_consumer = false});
  auto& jetfan = mesh.start_jetfan(mesh.config(kBuilder), false);
  REQUIRE(jetfan.wait(20s) == 78);
  CHECK_THAT(mesh.jetfan_log(), Catch::Contains("consumer \"node1_builder\" of stream \"EVENTS\" does not exist"));
  CHECK(mesh.controller().consumers("EVENTS").empty());  // and it did not create one
}

TEST_CASE("a stream name that is wrong stops jetfan with status 78 naming the stream, even with ack_policy set",
          "[integration]") {
  Mesh mesh;
  std::string config = mesh.config(kBuilder);
  config.replace(config.find("stream: EVENTS"), 14, "stream: EVENTZ\n  ack_policy: explicit");
  auto& jetfan = mesh.start_jetfan(config, false);
  REQUIRE(jetfan.wait(20s) == 78);
  CHECK_THAT(mesh.jetfan_log(), Catch::Contains("stream \"EVENTZ\" does not exist") &&
                                    Catch::Contains("Check consumer.stream") && !Catch::Contains("serving consumer"));
}

TEST_CASE("jetfan binds the existing consumer and never creates another", "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config(kBuilder));
  mesh.start_handler("builder");
  mesh.publish("a.b");
  REQUIRE(mesh.wait_settled());
  CHECK(mesh.controller().consumers("EVENTS") == std::vector<std::string>{"node1_builder"});
  CHECK_THAT(mesh.jetfan_log(), Catch::Contains("bound consumer \"node1_builder\""));
}

TEST_CASE("an unreachable server is retried with logged attempts, and served once it is up", "[integration]") {
  Mesh mesh({.start_server = false});
  mesh.start_jetfan(mesh.config(kBuilder), false);
  REQUIRE(mesh.wait_for_log("cannot reach", 20s, 3));
  CHECK_THAT(mesh.jetfan_log(), Catch::Contains("(attempt 3)"));
  mesh.start_server();
  mesh.controller().create_stream("EVENTS", {"events.>"});
  jetfan::example::ConsumerSpec spec;
  spec.durable = "node1_builder";
  mesh.controller().create_consumer("EVENTS", spec);
  REQUIRE(mesh.wait_for_log("serving consumer"));
  mesh.start_handler("builder");
  mesh.publish("a.b", "hello");
  REQUIRE(mesh.wait_seen("builder", 1));
  REQUIRE(mesh.wait_settled());
}

TEST_CASE("refused credentials stop jetfan at once with status 77 and a clear message", "[integration]") {
  Mesh mesh({.token = "right-token"});
  auto& jetfan = mesh.start_jetfan(mesh.config(kBuilder, "", "  token: wrong-token\n"), false);
  REQUIRE(jetfan.wait(20s) == 77);
  CHECK_THAT(mesh.jetfan_log(), Catch::Contains("refused jetfan's credentials"));
  CHECK(count_lines_containing(mesh.jetfan_log(), "cannot reach") == 0);  // it did not retry
}

TEST_CASE("the right credentials are accepted", "[integration]") {
  Mesh mesh({.token = "right-token"});
  mesh.start_jetfan(mesh.config(kBuilder, "", "  token: right-token\n"));
  mesh.start_handler("builder");
  mesh.publish("a.b");
  REQUIRE(mesh.wait_settled());
}

TEST_CASE("a bad config exits 78 with one line per error naming file, line and key", "[integration]") {
  Mesh mesh({.start_server = false});
  const std::string path = mesh.dir() + "/bad.yaml";
  std::ofstream(path) << "consumer:\n  stream: EVENTS\n  durable: d\n  colour: red\nsocket:\n  path: /tmp/x\n"
                         "handlers:\n  - name: b\n    patterns: [\"a..b\"]\n    ack_timeout: 3 seconds\n";
  std::string output;
  CHECK(run_jetfan({"serve", "--config", path}, mesh.dir(), output) == 78);
  CHECK_THAT(output, Catch::Contains(path + ":4: consumer.colour: unknown key"));
  CHECK_THAT(output, Catch::Contains(path + ":9: handlers[0].patterns[0]: \"a..b\""));
  CHECK_THAT(output, Catch::Contains(path + ":10: handlers[0].ack_timeout: \"3 seconds\" is not a duration"));
}

TEST_CASE("jetfan check reports every error, and exits 0 on a good file", "[integration]") {
  Mesh mesh({.start_server = false});
  const std::string bad = mesh.dir() + "/bad.yaml";
  std::ofstream(bad) << "nats:\n  tokn: x\nconsumer:\n  stream: EVENTS\nsocket: {path: /tmp/x, mode: \"8\"}\n"
                        "handlers: []\n";
  std::string output;
  CHECK(run_jetfan({"check", "--config", bad}, mesh.dir(), output) == 78);
  CHECK(count_lines_containing(output, bad + ":") == 4);  // tokn, durable, mode, handlers
  const std::string good = mesh.dir() + "/good.yaml";
  std::ofstream(good) << mesh.config(kBuilder);
  CHECK(run_jetfan({"check", "--config", good}, mesh.dir(), output) == 0);
  CHECK_THAT(output, Catch::Contains("OK"));
  CHECK(run_jetfan({"check"}, mesh.dir(), output) == 64);
  CHECK(run_jetfan({"--version"}, mesh.dir(), output) == 0);
  CHECK(run_jetfan({"--help"}, mesh.dir(), output) == 0);
  CHECK(run_jetfan({"check", "--config", mesh.dir() + "/missing.yaml"}, mesh.dir(), output) == 78);
  CHECK_THAT(output, Catch::Contains("missing.yaml:0: (file): cannot be read"));
}

TEST_CASE("the command line: --flag=value, per-command --help, usage errors exit 64, exec's 127", "[integration]") {
  Mesh mesh({.start_server = false});
  const std::string good = mesh.dir() + "/good.yaml";
  std::ofstream(good) << mesh.config(kBuilder);
  std::string output;
  CHECK(run_jetfan({"check", "--config=" + good}, mesh.dir(), output) == 0);
  CHECK_THAT(output, Catch::Contains(": OK: "));
  CHECK(run_jetfan({"check", "-c", good}, mesh.dir(), output) == 0);
  // A secret systemd hands over (LoadCredential=) cannot be found from a shell: noted, not an error.
  const std::string credential = mesh.dir() + "/credential.yaml";
  std::ofstream(credential) << mesh.config(kBuilder, "", "  token_file: ${CREDENTIALS_DIRECTORY}/nats-token\n");
  ::unsetenv("CREDENTIALS_DIRECTORY");
  CHECK(run_jetfan({"check", "-c", credential}, mesh.dir(), output) == 0);
  CHECK_THAT(output,
             Catch::Contains("${CREDENTIALS_DIRECTORY}/nats-token is not checked here") && Catch::Contains(": OK: "));
  ::setenv("CREDENTIALS_DIRECTORY", mesh.dir().c_str(), 1);  // and with it set, the file must be there
  CHECK(run_jetfan({"check", "-c", credential}, mesh.dir(), output) == 78);
  CHECK_THAT(output, Catch::Contains(mesh.dir() + "/nats-token: cannot be read"));
  ::unsetenv("CREDENTIALS_DIRECTORY");
  // --print: the config as jetfan runs it, which jetfan check passes as it is.
  CHECK(run_jetfan({"check", "--print", "-c", good}, mesh.dir(), output) == 0);
  CHECK_THAT(output, Catch::Contains("max_held_bytes: 32MiB") && Catch::Contains("ack_timeout: 30s"));
  std::ofstream(mesh.dir() + "/printed.yaml") << output;
  CHECK(run_jetfan({"check", "-c", mesh.dir() + "/printed.yaml"}, mesh.dir(), output) == 0);
  CHECK(run_jetfan({"check", "--help"}, mesh.dir(), output) == 0);
  CHECK_THAT(output, Catch::StartsWith("usage: jetfan check") && Catch::Contains("--config"));
  CHECK(run_jetfan({"status", "--help"}, mesh.dir(), output) == 0);
  CHECK_THAT(output, Catch::StartsWith("usage: jetfan status") && Catch::Contains("--json"));
  // Short, on stderr, and 64.
  CHECK(run_jetfan({"check", "--config=" + good, "--no-such-flag"}, mesh.dir(), output) == 64);
  CHECK_THAT(output, Catch::Contains("--no-such-flag"));
  CHECK(count_lines_containing(output, "") < 5);
  CHECK(run_jetfan({"no-such-command"}, mesh.dir(), output) == 64);
  CHECK_THAT(output, Catch::Contains("no-such-command"));
  CHECK(run_jetfan({}, mesh.dir(), output) == 64);
  CHECK(run_jetfan({"version"}, mesh.dir(), output) == 0);
  CHECK_THAT(output, Catch::StartsWith("jetfan "));
  // help: jetfan's, or the named command's, never the command run.
  CHECK(run_jetfan({"help"}, mesh.dir(), output) == 0);
  CHECK_THAT(output, Catch::StartsWith("usage: jetfan") && Catch::Contains("Commands:") && Catch::Contains("serve"));
  CHECK(run_jetfan({"help", "serve"}, mesh.dir(), output) == 0);
  CHECK_THAT(output, Catch::StartsWith("usage: jetfan serve") && Catch::Contains("--log-level"));
  CHECK(run_jetfan({"help", "dlq", "list"}, mesh.dir(), output) == 0);
  CHECK_THAT(output, Catch::StartsWith("usage: jetfan dlq list") && Catch::Contains("--seq"));
  CHECK(run_jetfan({"help", "nope"}, mesh.dir(), output) == 64);
  CHECK_THAT(output, Catch::Contains("no command \"nope\""));
  // As a shell would: 127 for a command that is nowhere; jetfan exec looks before it connects.
  CHECK(run_jetfan({"exec", "--handler=builder", "--socket=" + mesh.dir() + "/none.sock", "--", "no-such-command-here"},
                   mesh.dir(), output) == 127);
  CHECK_THAT(output, Catch::Contains("no such executable file in $PATH"));
}

namespace {
// jetfan's user may pull, ack and publish, but not read consumer info.
const char* kNoConsumerInfo = R"(
authorization {
  users = [
    {user: admin, password: admin}
    {user: jetfan, password: jetfan, permissions: {publish: {deny: ["$JS.API.CONSUMER.INFO.>"]}}}
  ]
}
)";
const std::string kJetfanUser = "  user: jetfan\n  password: jetfan\n";
}  // namespace

TEST_CASE("without consumer info and without consumer.ack_policy, jetfan says what to set and exits 78",
          "[integration]") {
  Mesh mesh({.server_conf = kNoConsumerInfo, .controller_credentials = "admin:admin"});
  auto& jetfan = mesh.start_jetfan(mesh.config(kBuilder, "", kJetfanUser), false);
  REQUIRE(jetfan.wait(30s) == 78);
  CHECK_THAT(mesh.jetfan_log(), Catch::Contains("cannot read the info of consumer \"node1_builder\"") &&
                                    Catch::Contains("consumer.ack_policy is not set"));
}

TEST_CASE("where consumer info cannot be read, consumer.ack_policy from the config is used", "[integration]") {
  Mesh mesh({.server_conf = kNoConsumerInfo, .controller_credentials = "admin:admin"});
  std::string config = mesh.config(kBuilder, "", kJetfanUser);
  config.insert(config.find("key:"), "  ack_policy: explicit\n");
  mesh.start_jetfan(config);
  CHECK_THAT(mesh.jetfan_log(), Catch::Contains("using consumer.ack_policy explicit"));
  mesh.start_handler("builder");
  mesh.publish("a.b");
  REQUIRE(mesh.wait_seen("builder", 1));
  REQUIRE(mesh.wait_settled());
}

TEST_CASE("jetfan check --connect checks against the server what serve would, and says each finding", "[integration]") {
  Mesh mesh;
  std::string output;
  std::string good = mesh.config(kBuilder);
  std::ofstream(mesh.dir() + "/good.yaml") << good;
  CHECK(run_jetfan({"check", "--connect", "-c", mesh.dir() + "/good.yaml"}, mesh.dir(), output) == 0);
  CHECK_THAT(output, Catch::Contains("ok   nats: connected to") &&
                         Catch::Contains("ok   consumer \"node1_builder\" of stream \"EVENTS\": a pull consumer") &&
                         Catch::Contains("ok   no reader waits at the consumer now") &&
                         Catch::Contains("OK against the server"));
  CHECK(mesh.controller().consumers("EVENTS") == std::vector<std::string>{"node1_builder"});  // nothing made

  // A reader at the consumer (this jetfan, serving): said, not failed.
  mesh.start_jetfan(good);
  CHECK(wait_until([&] {
    return run_jetfan({"check", "--connect", "-c", mesh.dir() + "/good.yaml"}, mesh.dir(), output) == 0 &&
           output.find("wait at the consumer now: a reader is there") != std::string::npos;
  }));

  // A durable that is not there, and a dead-letter subject no stream captures: each a FAIL with its fix.
  std::string wrong = good;
  wrong.replace(wrong.find("durable: node1_builder"), 22, "durable: nobody");
  wrong += "    dead_letter: {subject: dlq.nowhere}\n";
  std::ofstream(mesh.dir() + "/wrong.yaml") << wrong;
  CHECK(run_jetfan({"check", "--connect", "-c", mesh.dir() + "/wrong.yaml"}, mesh.dir(), output) == 78);
  CHECK_THAT(output, Catch::Contains("FAIL") &&
                         Catch::Contains("consumer \"nobody\" of stream \"EVENTS\" does not exist") &&
                         Catch::Contains("dlq.nowhere") && Catch::Contains("NOT OK against the server"));
  CHECK(mesh.controller().consumers("EVENTS") == std::vector<std::string>{"node1_builder"});
}

TEST_CASE("jetfan check --connect with no server says so and exits 69", "[integration]") {
  Mesh mesh({.start_server = false});
  std::ofstream(mesh.dir() + "/good.yaml") << mesh.config(kBuilder);
  std::string output;
  CHECK(run_jetfan({"check", "--connect", "-c", mesh.dir() + "/good.yaml"}, mesh.dir(), output) == 69);
  CHECK_THAT(output,
             Catch::Contains("FAIL nats: no server of nats.servers") && Catch::Contains("answered within 10 s"));
}
