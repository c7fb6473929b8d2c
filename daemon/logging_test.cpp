// The log's own escaping, and the text format written through it: what a peer sends can neither
// forge a line nor drive the terminal that shows the log.

#include "logging.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>

using namespace jetfan;

TEST_CASE("log text: control bytes and malformed UTF-8 are escaped, printable text and UTF-8 pass", "[unit]") {
  CHECK(escape_log_text("handler \"builder\" connected") == "handler \"builder\" connected");
  CHECK(escape_log_text("a\r\nb\tc") == "a\\r\\nb\\tc");
  CHECK(escape_log_text("\x1b[2J\x1b[31mred") == "\\x1b[2J\\x1b[31mred");
  CHECK(escape_log_text(std::string("nul\0del\x7f", 8)) == "nul\\x00del\\x7f");
  CHECK(escape_log_text("gr\xc3\xbc\xc3\x9f \xe2\x82\xac \xf0\x9f\x90\x9f") ==
        "gr\xc3\xbc\xc3\x9f \xe2\x82\xac \xf0\x9f\x90\x9f");
  CHECK(escape_log_text("\xc2\x9b"
                        "31m") == "\\xc2\\x9b31m");  // CSI as a C1 control, U+009B
  CHECK(escape_log_text("\x9b"
                        "31m") == "\\x9b31m");                  // and as a lone byte
  CHECK(escape_log_text("\xff\xc0\xaf") == "\\xff\\xc0\\xaf");  // no UTF-8; an overlong '/'
  CHECK(escape_log_text("\xe2\x82") == "\\xe2\\x82");           // cut short
  CHECK(escape_log_text("\xed\xa0\x80") == "\\xed\\xa0\\x80");  // a surrogate
}

TEST_CASE("log text: a peer's string in the text format stays on its one line", "[unit]") {
  char path[] = "/tmp/jetfan-logging-test-XXXXXX";
  const int file = ::mkstemp(path);
  REQUIRE(file >= 0);
  const int saved = ::dup(STDERR_FILENO);
  REQUIRE(saved >= 0);
  ::dup2(file, STDERR_FILENO);
  const auto before = spdlog::default_logger();
  setup_logging(LogFormat::kText, "info", false);
  log_warn("delivery.terminated", {{"reason", "x\r\n2026-01-01T00:00:00.000+00:00 error forged"}},
           "handler {} terminated delivery 1 as poison: {}", "\"builder\"",
           "x\r\n2026-01-01T00:00:00.000+00:00 error forged\x1b]0;owned\x07");
  std::fflush(stderr);
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  ::close(file);
  spdlog::set_default_logger(before);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  ::unlink(path);
  const std::string written = text.str();
  REQUIRE(!written.empty());
  CHECK(written.find('\n') == written.size() - 1);  // one line
  CHECK(written.find('\r') == std::string::npos);
  CHECK(written.find('\x1b') == std::string::npos);
  CHECK_THAT(written,
             Catch::EndsWith("as poison: x\\r\\n2026-01-01T00:00:00.000+00:00 error forged\\x1b]0;owned\\x07\n"));
}
