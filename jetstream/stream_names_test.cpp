#include <catch2/catch.hpp>

#include "stream_names.hpp"

using namespace jetfan::jetstream;

TEST_CASE("stream names: the request filters by subject", "[unit]") {
  CHECK(kStreamNamesSubject == "$JS.API.STREAM.NAMES");
  CHECK(stream_names_request("dlq.builder") == R"({"subject":"dlq.builder"})");
}

TEST_CASE("stream names: some, none (null), the server's error, an unreadable answer", "[unit]") {
  const auto two = parse_stream_names(R"({"total":2,"offset":0,"limit":1024,"streams":["DLQ","ALL"]})");
  REQUIRE(std::holds_alternative<StreamNames>(two));
  CHECK(std::get<StreamNames>(two).streams == std::vector<std::string>{"DLQ", "ALL"});
  CHECK(std::get<StreamNames>(two).total == 2);
  const auto none = parse_stream_names(R"({"total":0,"offset":0,"limit":1024,"streams":null})");
  REQUIRE(std::holds_alternative<StreamNames>(none));
  CHECK(std::get<StreamNames>(none).streams.empty());
  const auto denied = parse_stream_names(R"({"error":{"code":403,"description":"denied"}})");
  REQUIRE(std::holds_alternative<ApiError>(denied));
  CHECK(std::get<ApiError>(denied).describe() == "denied (403)");
  for (const char* bad : {"", "[]", R"({"streams":"DLQ"})", R"({"streams":[1]})", R"({"total":-1})"}) {
    INFO(bad);
    const auto read = parse_stream_names(bad);
    REQUIRE(std::holds_alternative<ApiError>(read));
    CHECK_FALSE(std::get<ApiError>(read).from_server());
  }
}
