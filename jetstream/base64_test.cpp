#include <catch2/catch.hpp>

#include "base64.hpp"

using namespace jetfan::jetstream;

TEST_CASE("base64: with and without padding, and what is not base64", "[unit]") {
  CHECK(base64_decode("") == std::string());
  CHECK(base64_decode("b25l") == std::string("one"));
  CHECK(base64_decode("dHdv") == std::string("two"));
  CHECK(base64_decode("Zml2ZQ==") == std::string("five"));
  CHECK(base64_decode("Zml2ZQ") == std::string("five"));
  CHECK(base64_decode("AP8=") == std::string("\0\xff", 2));
  CHECK_FALSE(base64_decode("*"));
  CHECK_FALSE(base64_decode("b25l\n"));
  CHECK_FALSE(base64_decode("Z"));  // six bits: no whole byte
}
