#include "token_bucket.hpp"

#include <catch2/catch.hpp>

using jetfan::TimePoint;
using jetfan::TokenBucket;
using namespace std::chrono_literals;

TEST_CASE("token bucket: a burst at once, then one per 1/rate, and the next token's time", "[unit]") {
  const TimePoint t0{1h};
  TokenBucket bucket(4, 2);  // 4 a second, 2 at once
  int sent = 0;
  while (bucket.ready(t0)) {
    bucket.take();
    ++sent;
  }
  CHECK(sent == 2);
  REQUIRE(bucket.next_token());
  CHECK(*bucket.next_token() == t0 + 250ms);
  CHECK_FALSE(bucket.ready(t0 + 249ms));
  CHECK(bucket.ready(t0 + 250ms));
  bucket.take();
  CHECK_FALSE(bucket.ready(t0 + 250ms));
  // A quiet spell fills it up to the burst, no further.
  CHECK(bucket.ready(t0 + 1h));
  bucket.take();
  CHECK(bucket.ready(t0 + 1h));
  bucket.take();
  CHECK_FALSE(bucket.ready(t0 + 1h));
}

TEST_CASE("token bucket: over any span, no more than burst + rate x span go", "[unit]") {
  const TimePoint t0{1h};
  TokenBucket bucket(50, TokenBucket::burst_for(50));
  int sent = 0;
  for (auto t = t0; t <= t0 + 2s; t += 1ms) {
    while (bucket.ready(t)) {
      bucket.take();
      ++sent;
    }
  }
  CHECK(sent <= 5 + 100);
  CHECK(sent >= 100);
}

TEST_CASE("token bucket: however small the rate, the next token is at most a day on", "[unit]") {
  const TimePoint t0{1h};
  TokenBucket bucket(1e-10, 1);
  REQUIRE(bucket.ready(t0));
  bucket.take();
  CHECK_FALSE(bucket.ready(t0 + 1s));
  CHECK(*bucket.next_token() == t0 + 1s + 24h);
}

TEST_CASE(
    "token bucket: unlimited by default, the burst is a tenth of a second's worth, at least 1, the rate as "
    "the config spells it",
    "[unit]") {
  TokenBucket none;
  CHECK_FALSE(none.limited());
  CHECK(none.ready(TimePoint{}));
  CHECK_FALSE(none.next_token());
  CHECK(TokenBucket::burst_for(0.5) == 1);
  CHECK(TokenBucket::burst_for(20) == 2);
  CHECK(TokenBucket::burst_for(10000) == 1000);
  CHECK(jetfan::rate_text(0.5) == "0.5");
  CHECK(jetfan::rate_text(20) == "20");
  CHECK(jetfan::rate_text(0) == "none");
}
