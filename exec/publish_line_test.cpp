#include "publish_line.hpp"

#include <catch2/catch.hpp>

using jetfan::parse_publish_line;

TEST_CASE("publish line: the subject to the first space, the payload every byte after it", "[unit]") {
  auto line = parse_publish_line("out.x hello  world \r");
  CHECK(line.error.empty());
  CHECK(line.subject == "out.x");
  CHECK(line.payload == "hello  world \r");
  line = parse_publish_line("out.x");
  CHECK((line.error.empty() && line.subject == "out.x" && line.payload.empty()));
  line = parse_publish_line("out.x ");
  CHECK((line.error.empty() && line.payload.empty()));
}

TEST_CASE("publish line: empty, no subject, or not one to publish to", "[unit]") {
  CHECK_THAT(parse_publish_line("").error, Catch::Contains("is empty"));
  CHECK_THAT(parse_publish_line(" out.x hi").error, Catch::Contains("starts with a space"));
  for (const char* bad : {"out..x hi", "out.* hi", "out.> hi", "out\tx hi", "out.x\r"}) {
    INFO(bad);
    CHECK_THAT(parse_publish_line(bad).error, Catch::Contains("not start with a subject"));
  }
}
