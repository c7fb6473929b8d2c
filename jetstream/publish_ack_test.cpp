#include <catch2/catch.hpp>

#include "publish_ack.hpp"

using namespace jetfan::jetstream;

TEST_CASE("publish ack: stored, a duplicate, in a domain", "[unit]") {
  const auto stored = parse_publish_ack(R"({"stream":"DLQ", "seq":7})");
  REQUIRE(std::holds_alternative<PublishAck>(stored));
  CHECK(std::get<PublishAck>(stored).stream == "DLQ");
  CHECK(std::get<PublishAck>(stored).seq == 7);
  CHECK_FALSE(std::get<PublishAck>(stored).duplicate);
  const auto again = parse_publish_ack(R"({"stream":"DLQ","seq":7,"duplicate": true,"domain":"hub"})");
  REQUIRE(std::holds_alternative<PublishAck>(again));
  CHECK(std::get<PublishAck>(again).duplicate);
  CHECK(std::get<PublishAck>(again).domain == "hub");
}

TEST_CASE("publish ack: the server's refusal, and answers that are no acknowledgement", "[unit]") {
  const auto refused = parse_publish_ack(
      R"({"error":{"code":400,"err_code":10060,"description":"expected stream does not match"},"stream":"DLQ","seq":0})");
  REQUIRE(std::holds_alternative<ApiError>(refused));
  CHECK(std::get<ApiError>(refused).description == "expected stream does not match");
  CHECK(std::get<ApiError>(refused).err_code == 10060);
  for (const char* bad : {"", "+OK", R"({"stream":"DLQ"})", R"({"stream":"DLQ","seq":"7"})", "[7]"}) {
    INFO(bad);
    const auto read = parse_publish_ack(bad);
    REQUIRE(std::holds_alternative<ApiError>(read));
    CHECK_FALSE(std::get<ApiError>(read).from_server());
    CHECK_THAT(std::get<ApiError>(read).description,
               Catch::StartsWith("an answer that is not JetStream's acknowledgement"));
  }
}
