// The server's version from its INFO line, and which versions' pins jetfan trusts.

#include <catch2/catch.hpp>

#include "server_version.hpp"

using namespace jetfan::jetstream;

TEST_CASE("server version: read from an INFO line as servers send it", "[unit]") {
  const auto version = version_in_info(
      "INFO {\"server_id\":\"NB\",\"server_name\":\"n1\",\"version\":\"2.15.1\",\"proto\":1,\"go\":\"go1.24\","
      "\"host\":\"0.0.0.0\",\"port\":4222,\"headers\":true,\"max_payload\":1048576,\"jetstream\":true}\r\n");
  REQUIRE(version);
  CHECK(version->major == 2);
  CHECK(version->minor == 15);
  CHECK(version->patch == 1);
  CHECK(version->text == "2.15.1");
  CHECK_FALSE(version_in_info("INFO {\"server_id\":\"NB\"}\r\n"));
  CHECK_FALSE(version_in_info("-ERR 'Authorization Violation'\r\n"));
  CHECK_FALSE(version_in_info("INFO not json"));
}

TEST_CASE("server version: suffixes are kept in the text and ignored in the numbers", "[unit]") {
  const auto beta = parse_server_version("v2.12.12-RC.1");
  REQUIRE(beta);
  CHECK(beta->patch == 12);
  CHECK(beta->text == "v2.12.12-RC.1");
  CHECK_FALSE(parse_server_version("2.15"));
  CHECK_FALSE(parse_server_version("2.x.1"));
  CHECK_FALSE(parse_server_version("2.15.1x"));
}

TEST_CASE("server version: pins are trusted from 2.12.12, 2.14.3 and 2.15", "[unit]") {
  for (const char* good : {"2.12.12", "2.12.20", "2.14.3", "2.14.9", "2.15.0", "2.15.1", "3.0.0"}) {
    INFO(good);
    CHECK_FALSE(pin_bugs(*parse_server_version(good)));
  }
  for (const char* bad : {"2.11.0", "2.11.17", "2.12.0", "2.12.11", "2.13.4", "2.14.0", "2.14.2"}) {
    INFO(bad);
    const auto why = pin_bugs(*parse_server_version(bad));
    REQUIRE(why);
    CHECK_THAT(*why, Catch::Contains("known pin bugs") && Catch::Contains(bad));
  }
  const auto old = pin_bugs(*parse_server_version("2.9.10"));
  REQUIRE(old);
  CHECK_THAT(*old, Catch::Contains("has no priority groups"));
}
