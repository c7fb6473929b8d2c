#include "nats_header.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

using jetfan::proto::find_header;
using jetfan::proto::HeaderField;
using jetfan::proto::HeaderFields;

namespace {

std::vector<std::pair<std::string, std::string>> all(std::string_view block) {
  std::vector<std::pair<std::string, std::string>> out;
  HeaderFields fields(block);
  HeaderField field;
  while (fields.next(field)) out.emplace_back(field.name, field.value);
  return out;
}

using Fields = std::vector<std::pair<std::string, std::string>>;

}  // namespace

TEST_CASE("nats header: the first value of a name, in any case, as a view into the block", "[unit]") {
  const std::string block = "NATS/1.0\r\nX-Other: 1\r\nentity-id:  m7 \r\nEntity-Id: later\r\n\r\n";
  const auto found = find_header(block, "Entity-Id");
  REQUIRE(found);
  CHECK(*found == "m7");
  CHECK(found->data() >= block.data());
  CHECK(found->data() + found->size() <= block.data() + block.size());
  CHECK(find_header(block, "ENTITY-ID") == "m7");
  CHECK(find_header(block, "x-other") == "1");
  CHECK(find_header(block, "Entity") == std::nullopt);
  CHECK(find_header(block, "Entity-Id-") == std::nullopt);
  CHECK(find_header(block, "") == std::nullopt);
  CHECK(find_header("", "X") == std::nullopt);
}

TEST_CASE("nats header: every field in order, a repeated name once per value", "[unit]") {
  CHECK(all("NATS/1.0\r\nTrace-Id: abc\r\nX:  two words \r\nX: again\r\n\r\n") ==
        Fields{{"Trace-Id", "abc"}, {"X", "two words"}, {"X", "again"}});
  CHECK(all("NATS/1.0\r\nUrl: http://x:1/\r\n\r\n") == Fields{{"Url", "http://x:1/"}});  // split at the first ':'
  CHECK(all("NATS/1.0\r\n\tA\t:\tb c\t\r\n\r\n") == Fields{{"A", "b c"}});
  CHECK(all("NATS/1.0\r\nEmpty:\r\nE2:   \r\n\r\n") == Fields{{"Empty", ""}, {"E2", ""}});
}

TEST_CASE("nats header: the status line is skipped, whatever it says", "[unit]") {
  CHECK(all("NATS/1.0 503\r\n\r\n").empty());
  CHECK(all("NATS/1.0 408 Request Timeout\r\nNats-Pending-Messages: 3\r\n\r\n") ==
        Fields{{"Nats-Pending-Messages", "3"}});
  CHECK(find_header("Name: on the status line\r\n\r\n", "Name") == std::nullopt);
  CHECK(all("NATS/1.0").empty());
}

TEST_CASE("nats header: the first blank line ends the block, a bare line feed and a missing end are read", "[unit]") {
  CHECK(all("NATS/1.0\r\nA: 1\r\n\r\nB: 2\r\n") == Fields{{"A", "1"}});
  CHECK(find_header("NATS/1.0\r\nA: 1\r\n\r\nB: 2\r\n", "B") == std::nullopt);
  CHECK(all("NATS/1.0\nA: 1\nB: 2") == Fields{{"A", "1"}, {"B", "2"}});
  CHECK(all("NATS/1.0\r\nA: 1\n\nB: 2") == Fields{{"A", "1"}});
  CHECK(find_header("NATS/1.0\r\nEntity-Id", "Entity-Id") == std::nullopt);  // cut short: no value
  CHECK(find_header("NATS/1.0\r\nEntity-Id: m", "Entity-Id") == "m");
}

TEST_CASE("nats header: garbage gives what can be read and never more than the block", "[unit]") {
  CHECK(all("junk\r\nno colon here\r\n: no name\r\n  : blank name\r\nok: 1\r\n\r\n") == Fields{{"ok", "1"}});
  CHECK(all("\r\n\r\nA: 1").empty());  // an empty status line, then the end of the block
  CHECK(all(std::string("NATS/1.0\r\nA\0B: \0\r\n\r\n", 19)) == Fields{{std::string("A\0B", 3), std::string("\0", 1)}});
  CHECK(all("NATS/1.0\r\n\r") == Fields{});
  CHECK(all("NATS/1.0\r\n:\r\n::\r\n") == Fields{});
  CHECK(all("NATS/1.0\r\nA::b\r\n") == Fields{{"A", ":b"}});
  // Every cut of a block reads as a prefix of the whole's fields.
  const std::string block = "NATS/1.0\r\nA: 1\r\nB: 22\r\nC: 333\r\n\r\n";
  const auto whole = all(block);
  for (std::size_t cut = 0; cut <= block.size(); ++cut) {
    const auto part = all(std::string_view(block).substr(0, cut));
    REQUIRE(part.size() <= whole.size());
    for (std::size_t i = 0; i + 1 < part.size(); ++i) CHECK(part[i] == whole[i]);
  }
}
