#include "log_rate_limiter.hpp"

#include <catch2/catch.hpp>

using namespace jetfan;
using std::chrono::milliseconds;

namespace {
const TimePoint kStart = TimePoint() + std::chrono::hours(1);
}

TEST_CASE("log rate limiter: a burst per window per key, the rest counted and reported", "[unit]") {
  LogRateLimiter limiter(3, milliseconds(1000));
  int logged = 0;
  for (int i = 0; i < 10000; ++i) logged += limiter.allow("timeout builder", kStart + milliseconds(i % 900)).log;
  CHECK(logged == 3);
  CHECK(limiter.allow("nak audit", kStart).log);  // another key has its own budget
  CHECK(limiter.take_expired(kStart + milliseconds(999)).empty());

  const auto next = limiter.allow("timeout builder", kStart + milliseconds(1000));
  CHECK(next.log);
  CHECK(next.suppressed_before == 9997);
}

TEST_CASE("log rate limiter: what was held back is reported once the window passes quietly", "[unit]") {
  LogRateLimiter limiter(1, milliseconds(1000));
  limiter.allow("k", kStart);
  limiter.allow("k", kStart);
  limiter.allow("quiet", kStart);
  const auto expired = limiter.take_expired(kStart + milliseconds(1000));
  REQUIRE(expired.size() == 1);
  CHECK(expired[0] == std::pair<std::string, std::uint64_t>("k", 1));
  CHECK(limiter.take_expired(kStart + milliseconds(5000)).empty());  // reset, and forgotten
  CHECK(limiter.allow("k", kStart + milliseconds(5000)).suppressed_before == 0);
}
