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

TEST_CASE("whole lines: exact bytes wherever they arrive, a line too long passed on once, flagged", "[unit]") {
  std::vector<std::string> lines;
  jetfan::WholeLines in(
      [&](std::string_view line, bool too_long) { lines.push_back((too_long ? "!" : "") + std::string(line)); }, 5);
  in.append("a b\r\nc");
  in.append("d\n\nabcde\nabcdefgh");
  in.append("ij\nxy");
  CHECK(lines == std::vector<std::string>{"a b\r", "cd", "", "abcde", "!abcde"});
  in.finish();
  CHECK(lines.back() == "xy");
  lines.clear();
  in.append("toolong");  // too long before its line end comes: passed on at once, the rest dropped
  CHECK(lines == std::vector<std::string>{"!toolo"});
  in.append("still\nok\n");
  in.finish();
  CHECK(lines == std::vector<std::string>{"!toolo", "ok"});
}
