#include "nats_headers.hpp"

#include <catch2/catch.hpp>

using jetfan::HeaderList;
using jetfan::parse_headers;

TEST_CASE("headers: every name and value in order, repeated names once per value", "[unit]") {
  const auto headers = parse_headers("NATS/1.0\r\nTrace-Id: abc\r\nX:  two words \r\nX: again\r\n\r\n");
  CHECK(headers == HeaderList{{"Trace-Id", "abc"}, {"X", "two words"}, {"X", "again"}});
  REQUIRE(jetfan::find_header(headers, "X") != nullptr);
  CHECK(*jetfan::find_header(headers, "X") == "two words");
  REQUIRE(jetfan::find_header(headers, "trace-id") != nullptr);  // names match in any case
  CHECK(*jetfan::find_header(headers, "trace-id") == "abc");
  CHECK(jetfan::find_header(headers, "Trace") == nullptr);
}

TEST_CASE("headers: a status line, a value with a colon, junk lines and no headers", "[unit]") {
  CHECK(parse_headers("").empty());
  CHECK(parse_headers("NATS/1.0 503\r\n\r\n").empty());
  CHECK(parse_headers("NATS/1.0\r\nUrl: http://x:1/\r\njunk\r\n: no name\r\n\r\n") ==
        HeaderList{{"Url", "http://x:1/"}});
  CHECK(parse_headers("NATS/1.0\nA: 1") == HeaderList{{"A", "1"}});  // bare \n and no end
}
