// The gaps below are what cnats 3.4.1 and 3.10.1 held between a received message's reply subject
// and its payload, for messages published with raw HPUBs (received_headers.hpp), before and after
// cnats parsed their headers.

#include <catch2/catch.hpp>

#include <string>

#include "received_headers.hpp"

using namespace jetfan;
using namespace std::string_literals;

TEST_CASE("header gap: the block as received, up to the NUL after it", "[unit]") {
  for (const std::string& block :
       {"NATS/1.0\r\nA: 1\r\nB: two\r\nA: 3\r\n\r\n"s, "NATS/1.0\r\nK: a\0b\r\n\r\n"s,
        "NATS/1.0 503 No Responders\r\nX: y\r\n\r\n"s, "NATS/1.0\r\n\r\n"s, "NATS/1.0\r\nT: v  \r\n\r\n"s}) {
    const std::string bytes = block + '\0';
    const HeaderGap gap = read_header_gap(bytes);
    CHECK(gap.kind == HeaderGap::Kind::kBlock);
    CHECK(gap.block == block);
  }
  CHECK(read_header_gap("").kind == HeaderGap::Kind::kNone);
}

TEST_CASE("header gap: a block cnats has parsed in place is told apart", "[unit]") {
  // What the blocks above became once anything asked cnats for a header.
  for (const std::string& parsed : {"NATS/1.0\0\nA\0 1\0\nB\0 two\0\nA\0 3\0\n\r\n\0"s, "NATS/1.0\0\n\r\n\0"s,
                                    "NATS/1.0 503 No Responders\0\nX\0 y\0\n\r\n\0"s}) {
    CHECK(read_header_gap(parsed).kind == HeaderGap::Kind::kParsed);
  }
}

TEST_CASE("header gap: bytes not laid out as known are not taken for a block", "[unit]") {
  CHECK(read_header_gap("NATS/1.0\r\nA: 1\r\n\r\n").kind == HeaderGap::Kind::kUnknown);  // no NUL after it
  CHECK(read_header_gap("payload\0"s).kind == HeaderGap::Kind::kUnknown);
  CHECK(read_header_gap("\0"s).kind == HeaderGap::Kind::kUnknown);
  CHECK(read_header_gap("NATS/1.0 x\nA: 1\r\n\r\n\0"s).kind == HeaderGap::Kind::kUnknown);  // a bare LF first
}

TEST_CASE("header gap: agreement with cnats's parse, by name and in each name's order", "[unit]") {
  const std::string block = "NATS/1.0\r\nA: 1\r\nB:  two \r\nA: 3\r\n\r\n";
  CHECK(agrees_with_parse(block, {{"B", "two"}, {"A", "1"}, {"A", "3"}}) == Agreement::kAgrees);
  CHECK(agrees_with_parse(block, {{"A", "3"}, {"A", "1"}, {"B", "two"}}) == Agreement::kDisagrees);
  CHECK(agrees_with_parse(block, {{"A", "1"}, {"A", "3"}}) == Agreement::kDisagrees);
  CHECK(agrees_with_parse(block, {}) == Agreement::kDisagrees);
  CHECK(agrees_with_parse("NATS/1.0\r\n\r\n", {}) == Agreement::kAgrees);
  // A NUL ends a value as cnats keeps it; a status line's fields are cnats's own.
  CHECK(agrees_with_parse("NATS/1.0\r\nK: a\0b\r\n\r\n"s, {{"K", "a"}}) == Agreement::kAgrees);
  CHECK(agrees_with_parse("NATS/1.0 503 No Responders\r\nX: y\r\n\r\n",
                          {{"Description", "No Responders"}, {"Status", "503"}, {"X", "y"}}) == Agreement::kAgrees);
}

TEST_CASE("header gap: what cnats reads differently leaves the layout unchecked", "[unit]") {
  CHECK(agrees_with_parse("NATS/1.0\r\nA: 1\r\n more\r\n\r\n", {{"A", "1 more"}}) == Agreement::kCannotTell);
  CHECK(agrees_with_parse("NATS/1.0\r\nA:\r\nB: 2\r\n\r\n", {{"A", "B: 2"}}) == Agreement::kCannotTell);
  CHECK(agrees_with_parse("NATS/1.0\r\nno colon\r\n\r\n", {}) == Agreement::kCannotTell);
  CHECK(agrees_with_parse("NATS/1.0 503\r\nStatus: 1\r\n\r\n", {{"Status", "503"}}) == Agreement::kCannotTell);
  CHECK(agrees_with_parse("NATS/1.0\r\nA: 1\r\n", {{"A", "1"}}) == Agreement::kCannotTell);  // no blank line
}
