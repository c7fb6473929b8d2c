// The startup verdict on the consumer's info, on answers recorded from real servers
// (jetstream/recorded/) and on the cases no server records (no answer at all).

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "consumer_binding.hpp"

using namespace jetfan;
using Kind = BindingVerdict::Kind;

namespace {

Config config() {
  Config c;
  c.file = "/etc/jetfan/builder.yaml";
  c.consumer.stream = "EVENTS";
  c.consumer.durable = "builder";
  return c;
}

std::string recorded(const std::string& version, const std::string& name) {
  std::ifstream in(std::string(JETFAN_RECORDED_DIR) + "/" + version + "/" + name + ".json");
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

ConsumerInfoAnswer parsed(const std::string& json) {
  auto answer = jetstream::parse_consumer_info(json);
  if (auto* info = std::get_if<jetstream::ConsumerInfo>(&answer)) return *info;
  return std::get<jetstream::ApiError>(answer);
}

const char* const kVersions[] = {"2.9.10", "2.10.27", "2.15.1"};

}  // namespace

TEST_CASE("a consumer's info binds it with the server's facts", "[unit]") {
  for (const char* version : kVersions) {
    INFO(version);
    const auto verdict = judge_binding(config(), parsed(recorded(version, "consumer_info")));
    REQUIRE(verdict.kind == Kind::kBound);
    CHECK(verdict.facts.from_server);
    REQUIRE(verdict.facts.ack_policy);
    CHECK(*verdict.facts.ack_policy == AckPolicy::kExplicit);
    CHECK(verdict.facts.ack_wait);
    CHECK(verdict.facts.delivered >= verdict.facts.ack_floor);
  }
}

TEST_CASE("a pinned_client consumer's facts carry its priority policy and groups", "[unit]") {
  const auto verdict = judge_binding(config(), parsed(recorded("2.15.1", "consumer_info_pinned")));
  REQUIRE(verdict.kind == Kind::kBound);
  CHECK(verdict.facts.priority_policy == "pinned_client");
  CHECK_FALSE(verdict.facts.priority_groups.empty());
}

TEST_CASE("a missing stream is refused as the stream's fault, not the consumer's", "[unit]") {
  for (const char* version : kVersions) {
    INFO(version);
    const auto verdict = judge_binding(config(), parsed(recorded(version, "consumer_info_no_stream")));
    REQUIRE(verdict.kind == Kind::kRefused);
    CHECK_THAT(verdict.message,
               Catch::StartsWith("/etc/jetfan/builder.yaml: consumer: stream \"EVENTS\" does not exist"));
    CHECK_THAT(verdict.message, Catch::Contains("consumer.stream"));
    CHECK_THAT(verdict.message, !Catch::Contains("ack_policy"));
  }
}

TEST_CASE("a missing consumer is refused, naming the durable and the stream", "[unit]") {
  for (const char* version : kVersions) {
    INFO(version);
    const auto verdict = judge_binding(config(), parsed(recorded(version, "consumer_info_not_found")));
    REQUIRE(verdict.kind == Kind::kRefused);
    CHECK_THAT(verdict.message, Catch::Contains("consumer \"builder\" of stream \"EVENTS\" does not exist"));
    CHECK_THAT(verdict.message, Catch::Contains("consumer.durable"));
  }
}

TEST_CASE("a push consumer is refused", "[unit]") {
  jetstream::ConsumerInfo info;
  info.deliver_subject = "deliver.here";
  const auto verdict = judge_binding(config(), info);
  REQUIRE(verdict.kind == Kind::kRefused);
  CHECK_THAT(verdict.message, Catch::Contains("is a push consumer (deliver subject \"deliver.here\")"));
}

TEST_CASE("no responders means JetStream is not there yet, worth trying again", "[unit]") {
  const auto verdict = judge_binding(config(), NoAnswer{true, "no responders available for request"});
  CHECK(verdict.kind == Kind::kNotAvailable);
  CHECK_THAT(verdict.message, Catch::Contains("JetStream does not answer"));
}

TEST_CASE("no answer, or another error, serves without facts and says why", "[unit]") {
  const auto timed_out = judge_binding(config(), NoAnswer{false, "timeout"});
  CHECK(timed_out.kind == Kind::kUnread);
  CHECK_FALSE(timed_out.facts.from_server);
  CHECK_THAT(timed_out.message,
             Catch::EndsWith("cannot read the info of consumer \"builder\" of stream \"EVENTS\": timeout"));
  const auto denied = judge_binding(config(), jetstream::ApiError{403, 0, "not allowed"});
  CHECK(denied.kind == Kind::kUnread);
  CHECK_THAT(denied.message, Catch::Contains("not allowed"));
}
