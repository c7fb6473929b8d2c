#include <catch2/catch.hpp>

#include "stream_message.hpp"

using namespace jetfan::jetstream;

TEST_CASE("stream message: the request subjects and bodies", "[unit]") {
  CHECK(msg_get_subject("DLQ") == "$JS.API.STREAM.MSG.GET.DLQ");
  CHECK(msg_delete_subject("DLQ") == "$JS.API.STREAM.MSG.DELETE.DLQ");
  CHECK(msg_get_next_request(5, "jobs.>") == R"({"next_by_subj":"jobs.>","seq":5})");
  CHECK(msg_get_next_request(5, "") == R"({"next_by_subj":">","seq":5})");
  CHECK(msg_get_last_request("dlq.builder") == R"({"last_by_subj":"dlq.builder"})");
  CHECK(msg_delete_request(3) == R"({"seq":3})");
}

TEST_CASE("stream message: seq, subject, headers, data and time of a MSG.GET answer", "[unit]") {
  // "NATS/1.0\r\nTenant: t1\r\n\r\n", "x"
  const auto read = parse_msg_get(
      R"({"type":"io.nats.jetstream.api.v1.stream_msg_get_response","message":{"subject":"jobs.a","seq":17,)"
      R"("hdrs":"TkFUUy8xLjANClRlbmFudDogdDENCg0K","data":"eA==","time":"2026-01-01T00:00:00Z"}})");
  REQUIRE(std::holds_alternative<StoredMessage>(read));
  const auto& message = std::get<StoredMessage>(read);
  CHECK(message.seq == 17);
  CHECK(message.subject == "jobs.a");
  CHECK(message.headers == "NATS/1.0\r\nTenant: t1\r\n\r\n");
  CHECK(message.payload == "x");
  CHECK(message.time == "2026-01-01T00:00:00Z");
  const auto bare = parse_msg_get(R"({"message":{"subject":"jobs.b","seq":4}})");
  REQUIRE(std::holds_alternative<StoredMessage>(bare));
  CHECK(std::get<StoredMessage>(bare).headers.empty());
  CHECK(std::get<StoredMessage>(bare).payload.empty());
}

TEST_CASE("stream message: only no message found is none, other errors and bad answers say what", "[unit]") {
  CHECK(std::holds_alternative<NoMessage>(
      parse_msg_get(R"({"error":{"code":404,"err_code":10037,"description":"no message found"}})")));
  const auto stream = parse_msg_get(R"({"error":{"code":404,"err_code":10059,"description":"stream not found"}})");
  REQUIRE(std::holds_alternative<ApiError>(stream));
  CHECK(std::get<ApiError>(stream).describe() == "stream not found (404)");
  const auto denied = parse_msg_get(R"({"error":{"code":403,"err_code":10099,"description":"denied"}})");
  REQUIRE(std::holds_alternative<ApiError>(denied));
  CHECK(std::get<ApiError>(denied).description == "denied");
  for (const char* bad :
       {"[", R"({"message":{"seq":1}})", R"({"message":{"seq":0,"subject":"a"}})",
        R"({"message":{"seq":1,"subject":"a","hdrs":"*"}})", R"({"message":{"seq":1,"subject":"a","data":"*"}})",
        R"({"message":{"seq":"1","subject":"a"}})", R"({"message":"x"})", R"({"type":"t"})"}) {
    INFO(bad);
    const auto read = parse_msg_get(bad);
    REQUIRE(std::holds_alternative<ApiError>(read));
    CHECK_FALSE(std::get<ApiError>(read).from_server());
  }
}

TEST_CASE("stream message: MSG.DELETE's success, error, or neither", "[unit]") {
  CHECK_FALSE(parse_msg_delete(R"({"type":"io.nats.jetstream.api.v1.stream_msg_delete_response","success":true})"));
  const auto gone = parse_msg_delete(R"({"error":{"code":400,"err_code":10043,"description":"sequence 2 not found"}})");
  REQUIRE(gone);
  CHECK(gone->describe() == "sequence 2 not found (400)");
  for (const char* bad : {"", R"({"success":false})", R"({"success":"yes"})", "{}"}) {
    INFO(bad);
    const auto why = parse_msg_delete(bad);
    REQUIRE(why);
    CHECK_FALSE(why->from_server());
  }
}
