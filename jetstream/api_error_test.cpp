#include <catch2/catch.hpp>

#include "api_error.hpp"

using namespace jetfan::jetstream;

TEST_CASE("api error: the server's code, err_code and description", "[unit]") {
  const auto error =
      parse_api_error(R"({"type":"t","error":{"code":404,"err_code":10037,"description":"no message found"}})");
  REQUIRE(error);
  CHECK(error->code == 404);
  CHECK(error->err_code == kNoMessageFound);
  CHECK(error->description == "no message found");
  CHECK(error->from_server());
  CHECK(error->is_not_found());
  CHECK(error->describe() == "no message found (404)");
}

TEST_CASE("api error: only err_code 10037 is not found, though a missing stream is a 404 too", "[unit]") {
  const auto stream = parse_api_error(R"({"error":{"code":404,"err_code":10059,"description":"stream not found"}})");
  REQUIRE(stream);
  CHECK_FALSE(stream->is_not_found());
  const auto old_form = parse_api_error(R"({"error":{"code":404,"description":"no message found"}})");
  REQUIRE(old_form);
  CHECK_FALSE(old_form->is_not_found());
}

TEST_CASE("api error: none, an odd error member, and answers that are not JSON", "[unit]") {
  CHECK_FALSE(parse_api_error(R"({"stream":"EVENTS","seq":1})"));
  CHECK_FALSE(parse_api_error("not json"));
  CHECK_FALSE(parse_api_error("[1]"));
  const auto odd = parse_api_error(R"({"error":"boom"})");
  REQUIRE(odd);
  CHECK(odd->from_server());
  CHECK(odd->description == "an error without a description");
  const auto typed = parse_api_error(R"({"error":{"code":"404","description":7}})");
  REQUIRE(typed);
  CHECK(typed->code == -1);
  CHECK(typed->describe() == "an error without a description");
}

TEST_CASE("api error: an unreadable answer is no server's and quotes the answer", "[unit]") {
  const auto error = unreadable("not a JSON object", std::string(300, 'x'));
  CHECK_FALSE(error.from_server());
  CHECK(error.describe() == "not a JSON object: " + std::string(200, 'x'));
}
