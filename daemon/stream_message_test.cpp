#include <catch2/catch.hpp>

#include "stream_message.hpp"

using namespace jetfan;

TEST_CASE("stream message: subject, sequence and headers are read from a MSG.GET answer", "[unit]") {
  // "NATS/1.0\r\nTenant: t1\r\n\r\n"
  const auto read = parse_stream_message(
      R"({"type":"io.nats.jetstream.api.v1.stream_msg_get_response","message":{"subject":"jobs.a","seq":17,)"
      R"("hdrs":"TkFUUy8xLjANClRlbmFudDogdDENCg0K","data":"eA==","time":"2026-01-01T00:00:00Z"}})");
  REQUIRE(std::holds_alternative<StreamMessage>(read));
  const auto& message = std::get<StreamMessage>(read);
  CHECK(message.stream_seq == 17);
  CHECK(message.subject == "jobs.a");
  CHECK(message.headers == "NATS/1.0\r\nTenant: t1\r\n\r\n");
}

TEST_CASE("stream message: no message found is none, other errors and bad answers say what", "[unit]") {
  CHECK(std::holds_alternative<NoStreamMessage>(
      parse_stream_message(R"({"error":{"code":404,"err_code":10037,"description":"no message found"}})")));
  const auto denied = parse_stream_message(R"({"error":{"code":403,"err_code":10099,"description":"denied"}})");
  REQUIRE(std::holds_alternative<std::string>(denied));
  CHECK(std::get<std::string>(denied) == "denied");
  CHECK(std::holds_alternative<std::string>(parse_stream_message("[")));
  CHECK(std::holds_alternative<std::string>(parse_stream_message(R"({"message":{"seq":1}})")));
  CHECK(std::holds_alternative<std::string>(parse_stream_message(R"({"message":{"seq":1,"subject":"a","hdrs":"*"}})")));
}

TEST_CASE("stream message: the request asks for the next match of the filter", "[unit]") {
  CHECK(stream_message_request(5, "jobs.>") == R"({"next_by_subj":"jobs.>","seq":5})");
  CHECK(stream_message_request(5, "") == R"({"next_by_subj":">","seq":5})");
}
