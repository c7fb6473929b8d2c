#include "exec_options.hpp"

#include <catch2/catch.hpp>

using jetfan::parse_exec_args;

namespace {
jetfan::ParsedExecArgs parse(std::vector<std::string> words) { return parse_exec_args(words); }
}  // namespace

TEST_CASE("exec args: everything given", "[unit]") {
  const auto parsed = parse({"--handler", "builder", "--socket", "/run/j.sock", "--concurrency", "8", "--timeout",
                             "30s", "--ack-timeout", "1m", "--", "sh", "-c", "cat --x"});
  REQUIRE(parsed.options);
  const auto& o = *parsed.options;
  CHECK(o.handler == "builder");
  CHECK(o.socket == "/run/j.sock");
  CHECK(o.concurrency == 8);
  CHECK(o.timeout == std::chrono::seconds(30));
  CHECK(o.ack_timeout == std::chrono::minutes(1));
  CHECK(o.command == std::vector<std::string>{"sh", "-c", "cat --x"});
}

TEST_CASE("exec args: every flag also as --flag=value", "[unit]") {
  const auto parsed = parse({"--handler=builder", "--socket=/run/j.sock", "--concurrency=8", "--timeout=30s",
                             "--ack-timeout=1m", "--", "sh", "-c", "cat --x=1"});
  REQUIRE(parsed.options);
  const auto& o = *parsed.options;
  CHECK(o.handler == "builder");
  CHECK(o.socket == "/run/j.sock");
  CHECK(o.concurrency == 8);
  CHECK(o.timeout == std::chrono::seconds(30));
  CHECK(o.ack_timeout == std::chrono::minutes(1));
  CHECK(o.command == std::vector<std::string>{"sh", "-c", "cat --x=1"});
  const auto config = parse({"--config=/etc/jetfan/b.yaml", "--handler=b", "--", "true"});
  REQUIRE(config.options);
  CHECK(config.options->config == "/etc/jetfan/b.yaml");
}

TEST_CASE("exec args: defaults, and --config instead of --socket", "[unit]") {
  const auto parsed = parse({"--config", "/etc/jetfan/b.yaml", "--handler", "b", "--", "true"});
  REQUIRE(parsed.options);
  CHECK(parsed.options->config == "/etc/jetfan/b.yaml");
  CHECK(parsed.options->concurrency == 1);
  CHECK_FALSE(parsed.options->timeout);
  CHECK_FALSE(parsed.options->ack_timeout);
}

TEST_CASE("exec args: each mistake is named", "[unit]") {
  auto error = [](std::vector<std::string> words) { return parse(std::move(words)).error; };
  CHECK_THAT(error({"--socket", "s", "--", "true"}), Catch::Contains("--handler NAME is required"));
  CHECK_THAT(error({"--handler", "h", "--", "true"}), Catch::Contains("one of --socket PATH and --config FILE"));
  CHECK_THAT(error({"--handler", "h", "--socket", "s", "--config", "c", "--", "true"}), Catch::Contains("one of"));
  CHECK_THAT(error({"--handler", "h", "--socket", "s"}), Catch::Contains("no command"));
  CHECK_THAT(error({
                 "--handler",
                 "h",
                 "--socket",
                 "s",
                 "--",
             }),
             Catch::Contains("no command"));
  CHECK_THAT(error({"--handler", "h", "--socket", "s", "true"}), Catch::Contains("unexpected argument \"true\""));
  CHECK_THAT(error({"--handler"}), Catch::Contains("--handler"));
  CHECK_THAT(error({"--handler", "h", "--socket", "s", "--bogus", "--", "x"}),
             Catch::Contains("unexpected argument \"--bogus\""));
  CHECK_THAT(error({"--handler", "h", "--socket", "s", "--concurrency", "0", "--", "x"}), Catch::Contains("1 to 4096"));
  CHECK_THAT(error({"--handler", "h", "--socket", "s", "--concurrency", "2x", "--", "x"}), Catch::Contains("2x"));
  CHECK_THAT(error({"--handler", "h", "--socket", "s", "--timeout", "10", "--", "x"}),
             Catch::Contains("not a duration"));
  CHECK_THAT(error({"--handler", "h", "--config", "c", "--ack-timeout", "1s", "--", "x"}),
             Catch::Contains("read from --config"));
  CHECK(parse({"--help"}).help);
}
