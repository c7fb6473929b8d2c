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

TEST_CASE("base64: encoding pads to four characters and reads back byte for byte", "[unit]") {
  CHECK(base64_encode("") == "");
  CHECK(base64_encode("one") == "b25l");
  CHECK(base64_encode("five") == "Zml2ZQ==");
  CHECK(base64_encode("fives") == "Zml2ZXM=");
  CHECK(base64_encode(std::string("\0\xff", 2)) == "AP8=");
  std::string every;
  for (int c = 0; c < 256; ++c) every.push_back(static_cast<char>(c));
  for (std::size_t n = 0; n <= every.size(); n += 37)
    CHECK(base64_decode(base64_encode(every.substr(0, n))) == every.substr(0, n));
}
