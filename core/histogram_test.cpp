#include <catch2/catch.hpp>

#include "histogram.hpp"

using namespace jetfan;
using namespace std::chrono_literals;

TEST_CASE("a histogram counts each value into the first bucket whose bound is not below it", "[unit]") {
  LatencyHistogram h;
  h.observe(100us);  // on the first bound: first bucket
  h.observe(101us);
  h.observe(-5ms);  // a clock that went backwards: zero
  h.observe(2h);    // past the last bound: +Inf
  CHECK(h.bucket(0) == 2);
  CHECK(h.bucket(1) == 1);
  CHECK(h.bucket(LatencyHistogram::kBoundsMicros.size()) == 1);
  CHECK(h.count() == 4);
  CHECK(h.sum_seconds() == Approx(7200.000201));
}
