#include <catch2/catch.hpp>

#include "consumer_info.hpp"

using namespace jetfan::jetstream;
using std::chrono::seconds;

TEST_CASE("consumer info: the request subject", "[unit]") {
  CHECK(consumer_info_subject("EVENTS", "node1_builder") == "$JS.API.CONSUMER.INFO.EVENTS.node1_builder");
}

TEST_CASE("consumer info: the config and state callers read", "[unit]") {
  const auto read = parse_consumer_info(
      R"({"type":"io.nats.jetstream.api.v1.consumer_info_response","stream_name":"EVENTS","name":"node1_builder",
          "config":{"durable_name":"node1_builder","ack_policy":"explicit","ack_wait":30000000000,"max_deliver":5,
                    "max_ack_pending":1000,"filter_subject":"jobs.>"},
          "delivered":{"consumer_seq":12,"stream_seq":40},"ack_floor":{"consumer_seq":10,"stream_seq":38},
          "num_ack_pending":2,"num_redelivered":1,"num_waiting":1,"num_pending":7})");
  REQUIRE(std::holds_alternative<ConsumerInfo>(read));
  const auto& info = std::get<ConsumerInfo>(read);
  CHECK(info.stream_name == "EVENTS");
  CHECK(info.name == "node1_builder");
  CHECK(info.durable_name == "node1_builder");
  CHECK(info.num_pending == 7);
  CHECK(info.num_ack_pending == 2);
  CHECK(info.num_redelivered == 1);
  CHECK(info.num_waiting == 1);
  CHECK(info.ack_floor.stream_seq == 38);
  CHECK(info.ack_floor.consumer_seq == 10);
  CHECK(info.delivered.stream_seq == 40);
  CHECK(info.delivered.consumer_seq == 12);
  CHECK(info.ack_policy == "explicit");
  CHECK(info.ack_wait == seconds(30));
  CHECK(info.max_deliver == 5);
  CHECK(info.max_ack_pending == 1000);
  CHECK(info.filter_subject == "jobs.>");
  CHECK(info.deliver_subject.empty());
  CHECK(info.priority_groups.empty());
  CHECK_FALSE(info.paused);
}

TEST_CASE("consumer info: defaults for what a config leaves out", "[unit]") {
  const auto read = parse_consumer_info(R"({"config":{}})");
  REQUIRE(std::holds_alternative<ConsumerInfo>(read));
  const auto& info = std::get<ConsumerInfo>(read);
  CHECK(info.ack_policy == "explicit");
  CHECK(info.max_deliver == -1);
  CHECK(info.max_ack_pending == -1);
  CHECK(info.ack_wait.count() == 0);
}

TEST_CASE("consumer info: the server's error, or an answer that cannot be read", "[unit]") {
  const auto missing =
      parse_consumer_info(R"({"error":{"code":404,"err_code":10014,"description":"consumer not found"}})");
  REQUIRE(std::holds_alternative<ApiError>(missing));
  CHECK(std::get<ApiError>(missing).err_code == kConsumerNotFound);
  CHECK(std::get<ApiError>(missing).describe() == "consumer not found (404)");
  for (const char* bad : {"", "[]", "{", R"({"config":3})", R"({"num_pending":"x","config":{}})",
                          R"({"config":{"ack_wait":"30s"}})", R"({"config":{},"delivered":{"stream_seq":-1}})"}) {
    INFO(bad);
    const auto read = parse_consumer_info(bad);
    REQUIRE(std::holds_alternative<ApiError>(read));
    CHECK_FALSE(std::get<ApiError>(read).from_server());
  }
}

TEST_CASE("consumer info: priority groups and pause, as servers since 2.11 say them", "[unit]") {
  const auto read = parse_consumer_info(
      R"({"config":{"durable_name":"d","priority_policy":"pinned_client","priority_groups":["jobs","more"],
                    "priority_timeout":120000000000,"pause_until":"2100-01-01T00:00:00Z"},
          "paused":true,"pause_remaining":99,
          "priority_groups":[{"group":"jobs","pinned_client_id":"abc","pinned_ts":"2026-01-01T00:00:00Z"},
                             {"group":"more","pinned_ts":"0001-01-01T00:00:00Z"}]})");
  REQUIRE(std::holds_alternative<ConsumerInfo>(read));
  const auto& info = std::get<ConsumerInfo>(read);
  CHECK(info.priority_policy == "pinned_client");
  CHECK(info.priority_groups == std::vector<std::string>{"jobs", "more"});
  CHECK(info.pinned_ttl == seconds(120));
  CHECK(info.paused);
  CHECK(info.pause_until == "2100-01-01T00:00:00Z");
  CHECK(info.pause_remaining.count() == 99);
  REQUIRE(info.group_states.size() == 2);
  CHECK(info.group_states[0].group == "jobs");
  CHECK(info.group_states[0].pinned_client_id == "abc");
  CHECK(info.group_states[1].pinned_client_id.empty());
}

TEST_CASE("consumer info: newer members of an unexpected type are read as an older server's silence", "[unit]") {
  const auto read = parse_consumer_info(
      R"({"config":{"priority_groups":"jobs","priority_policy":3,"pause_until":false},"paused":1,
          "priority_groups":{"group":"jobs"}})");
  REQUIRE(std::holds_alternative<ConsumerInfo>(read));
  const auto& info = std::get<ConsumerInfo>(read);
  CHECK(info.priority_groups.empty());
  CHECK(info.priority_policy.empty());
  CHECK(info.pause_until.empty());
  CHECK_FALSE(info.paused);
  CHECK(info.group_states.empty());
}
