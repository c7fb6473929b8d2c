#include <catch2/catch.hpp>

#include "stream_info.hpp"

using namespace jetfan::jetstream;

TEST_CASE("stream info: the request subject names the stream", "[unit]") {
  CHECK(stream_info_subject("OUT") == "$JS.API.STREAM.INFO.OUT");
}

TEST_CASE("stream info: the duplicate window, the server's error, an unreadable answer", "[unit]") {
  // As nats-server 2.9 answers (trimmed): the window in nanoseconds.
  const auto out = parse_stream_info(
      R"({"type":"io.nats.jetstream.api.v1.stream_info_response","config":{"name":"OUT","subjects":["out.>"],)"
      R"("retention":"limits","duplicate_window":120000000000,"storage":"file"},"state":{"messages":0}})");
  REQUIRE(std::holds_alternative<StreamInfo>(out));
  const StreamInfo& info = std::get<StreamInfo>(out);
  CHECK(info.name == "OUT");
  CHECK(info.subjects == std::vector<std::string>{"out.>"});
  CHECK(info.duplicate_window == std::chrono::minutes(2));
  CHECK(info.max_msgs_per_subject == -1);
  CHECK(info.max_age == std::chrono::nanoseconds(0));
  CHECK(info.num_replicas == 1);
  const auto missing = parse_stream_info(R"({"error":{"code":404,"err_code":10059,"description":"stream not found"}})");
  REQUIRE(std::holds_alternative<ApiError>(missing));
  CHECK(std::get<ApiError>(missing).from_server());
  for (const char* bad : {"", "[]", R"({"config":1})", R"({"config":{"duplicate_window":"2m"}})"}) {
    INFO(bad);
    const auto read = parse_stream_info(bad);
    REQUIRE(std::holds_alternative<ApiError>(read));
    CHECK_FALSE(std::get<ApiError>(read).from_server());
  }
}

TEST_CASE("stream info: a key-value bucket's history, TTL and replicas", "[unit]") {
  // As `nats kv add B --history 1 --ttl 1h --replicas 3` makes it (trimmed).
  const auto out = parse_stream_info(
      R"({"config":{"name":"KV_B","subjects":["$KV.B.>"],"max_msgs_per_subject":1,"max_age":3600000000000,)"
      R"("num_replicas":3,"duplicate_window":120000000000,"allow_rollup_hdrs":true,"deny_delete":true}})");
  REQUIRE(std::holds_alternative<StreamInfo>(out));
  const StreamInfo& info = std::get<StreamInfo>(out);
  CHECK(info.max_msgs_per_subject == 1);
  CHECK(info.max_age == std::chrono::hours(1));
  CHECK(info.num_replicas == 3);
  const auto bad = parse_stream_info(R"({"config":{"name":"KV_B","max_age":"1h"}})");
  REQUIRE(std::holds_alternative<ApiError>(bad));
  CHECK_FALSE(std::get<ApiError>(bad).from_server());
}
