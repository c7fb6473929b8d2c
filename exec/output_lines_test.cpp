#include "output_lines.hpp"

#include <catch2/catch.hpp>

#include <vector>

TEST_CASE("output lines: split wherever the bytes arrive, CRLF or LF, last line kept", "[unit]") {
  std::vector<std::string> lines;
  jetfan::OutputLines out([&](std::string_view line) { lines.emplace_back(line); });
  out.append("one\r\ntw");
  out.append("o\n\nthr");
  out.append("ee");
  CHECK(lines == std::vector<std::string>{"one", "two", ""});
  CHECK(out.last_line() == "two");
  out.finish();
  CHECK(lines.back() == "three");
  CHECK(out.last_line() == "three");
  out.append("  \n");
  CHECK(out.last_line() == "three");  // a blank line is not a reason
}

TEST_CASE("output lines: a line longer than the limit is passed on in pieces", "[unit]") {
  std::vector<std::string> lines;
  jetfan::OutputLines out([&](std::string_view line) { lines.emplace_back(line); }, 4);
  out.append("abcdefghij");
  CHECK(lines == std::vector<std::string>{"abcd", "efgh"});
  out.append("\n");
  CHECK(lines.back() == "ij");
}
