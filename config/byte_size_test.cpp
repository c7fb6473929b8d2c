#include "byte_size.hpp"

#include <catch2/catch.hpp>

using jetfan::parse_byte_size;

TEST_CASE("sizes accept bytes and binary units", "[unit]") {
  CHECK(parse_byte_size("4096") == 4096u);
  CHECK(parse_byte_size("100B") == 100u);
  CHECK(parse_byte_size("512KiB") == 512u * 1024);
  CHECK(parse_byte_size("64MiB") == 64u * 1024 * 1024);
  CHECK(parse_byte_size("2GiB") == 2ULL * 1024 * 1024 * 1024);
}

TEST_CASE("sizes reject everything else", "[unit]") {
  for (const char* bad :
       {"", "MiB", "64MB", "64 MiB", "-1", "1.5MiB", "64mib", "99999999999999999999GiB", "18446744073709551615KiB"}) {
    INFO(bad);
    CHECK_FALSE(parse_byte_size(bad));
  }
}
