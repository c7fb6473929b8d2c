#include "adaptive_limit.hpp"

#include <catch2/catch.hpp>
#include <deque>

using jetfan::AdaptiveLimit;
using jetfan::TimePoint;
using Cut = jetfan::AdaptiveLimit::Cut;
using namespace std::chrono_literals;

namespace {
const TimePoint t0{1h};

// Confirms `count` deliveries at `latency` with the connection full (in flight = the limit).
void confirm_full(AdaptiveLimit& limit, int count, std::chrono::nanoseconds latency) {
  for (int i = 0; i < count; ++i) limit.confirmed(latency, limit.limit(), false, t0);
}

// A handler that works on at most `capacity` deliveries at once, each for `service`, the rest
// waiting inside it in order; jetfan keeps `limit.limit()` deliveries in flight, for there is always
// more, sending the next as soon as one is confirmed. Steps of 1 ms; returns the mean limit and the deliveries
// confirmed over `span`.
struct Phase {
  double mean_limit;
  int confirmed;
};
struct SimulatedHandler {
  std::deque<TimePoint> sent;  // in flight, in order of sending; the first `capacity` are worked on
  std::deque<TimePoint> started;
  TimePoint now = t0;

  Phase run(AdaptiveLimit& limit, std::size_t capacity, std::chrono::milliseconds service,
            std::chrono::milliseconds span) {
    double limit_sum = 0;
    int confirmed = 0;
    int steps = 0;
    for (const TimePoint end = now + span; now < end; now += 1ms) {
      while (started.size() < std::min(capacity, sent.size())) started.push_back(now);
      while (!started.empty() && now - started.front() >= service) {
        const std::size_t in_flight = sent.size();
        limit.confirmed(now - sent.front(), in_flight, false, now);
        sent.pop_front();
        started.pop_front();
        ++confirmed;
        // jetfan sends the next at once, as DispatchCore does after each confirmation.
        while (sent.size() < limit.limit()) sent.push_back(now);
        while (started.size() < std::min(capacity, sent.size())) started.push_back(now);
      }
      while (sent.size() < limit.limit()) sent.push_back(now);
      limit_sum += limit.limit();
      ++steps;
    }
    return {limit_sum / steps, confirmed};
  }
};
}  // namespace

TEST_CASE("adaptive limit: without adaptive_inflight it is max_inflight, whatever happens", "[unit]") {
  AdaptiveLimit limit(16);
  CHECK_FALSE(limit.adaptive());
  limit.failed(Cut::kTimeout, 16, t0);
  limit.failed(Cut::kNak, 16, t0);
  confirm_full(limit, 100, 900ms);
  CHECK(limit.limit() == 16);
  CHECK(limit.cuts(Cut::kTimeout) == 0);
}

TEST_CASE("adaptive limit: starts at the floor, doubles per round until the first cut, never passes the ceiling",
          "[unit]") {
  AdaptiveLimit limit(2, 64);
  CHECK(limit.limit() == 2);
  confirm_full(limit, 2, 5ms);  // one round of 2
  CHECK(limit.limit() == 4);
  confirm_full(limit, 4, 5ms);
  CHECK(limit.limit() == 8);
  confirm_full(limit, 1000, 5ms);
  CHECK(limit.limit() == 64);
}

TEST_CASE("adaptive limit: a connection that does not use its limit does not grow it", "[unit]") {
  AdaptiveLimit limit(4, 64);
  for (int i = 0; i < 1000; ++i) limit.confirmed(5ms, 3, false, t0);
  CHECK(limit.limit() == 4);
}

TEST_CASE("adaptive limit: a NAK cuts to 0.7, a timeout to half, one cut per round, never below the floor", "[unit]") {
  AdaptiveLimit limit(3, 100);
  confirm_full(limit, 1000, 5ms);
  REQUIRE(limit.limit() == 100);
  limit.failed(Cut::kNak, 100, t0 + 1s);
  CHECK(limit.limit() == 70);
  CHECK(limit.cuts(Cut::kNak) == 1);
  REQUIRE(limit.last_cut() == Cut::kNak);
  CHECK(limit.last_cut_at() == t0 + 1s);
  // The other 99 in flight at the cut were sent under the old limit: their failures cut no more.
  for (int i = 0; i < 99; ++i) limit.failed(Cut::kTimeout, 99 - i, t0 + 2s);
  CHECK(limit.limit() == 70);
  CHECK(limit.cuts(Cut::kTimeout) == 0);
  limit.failed(Cut::kTimeout, 70, t0 + 3s);
  CHECK(limit.limit() == 35);
  CHECK(limit.cuts(Cut::kTimeout) == 1);
  // After the first cut it grows by about one per round, not per confirmation.
  confirm_full(limit, 69, 5ms);  // the rest of the round at the cut: 69 were still out
  confirm_full(limit, 35, 5ms);
  CHECK(limit.limit() == 35);  // 1/35 a confirmation, a little less each time: a round and one more
  confirm_full(limit, 1, 5ms);
  CHECK(limit.limit() == 36);
  for (int i = 0; i < 20; ++i) {
    limit.failed(Cut::kTimeout, limit.limit(), t0 + 4s);
    for (std::uint32_t out = limit.limit(); out > 1; --out) limit.failed(Cut::kTimeout, out, t0 + 4s);
  }
  CHECK(limit.limit() == 3);
}

TEST_CASE("adaptive limit: rising latency cuts, a WIP'd delivery's latency does not count", "[unit]") {
  AdaptiveLimit limit(1, 50);
  confirm_full(limit, 500, 10ms);
  REQUIRE(limit.limit() == 50);
  for (int i = 0; i < 200; ++i) limit.confirmed(900ms, 50, true, t0);  // kept alive: long by design
  CHECK(limit.cuts(Cut::kLatency) == 0);
  CHECK(limit.limit() == 50);
  // 12 ms is within 1.5 x 10 ms + 1 ms: noise, no cut.
  confirm_full(limit, 200, 12ms);
  CHECK(limit.cuts(Cut::kLatency) == 0);
  confirm_full(limit, 20, 40ms);
  CHECK(limit.cuts(Cut::kLatency) == 1);
  CHECK(limit.limit() == 35);
  CHECK(limit.baseline_latency() == 10ms);
}

TEST_CASE("adaptive limit: a lasting change of the handler's latency becomes the baseline within 20 s", "[unit]") {
  AdaptiveLimit limit(1, 50);
  TimePoint now = t0;
  const auto confirm = [&](int count, std::chrono::nanoseconds latency) {
    for (int i = 0; i < count; ++i) {
      now += 1ms;
      limit.confirmed(latency, limit.limit(), false, now);
    }
  };
  confirm(500, 1ms);
  REQUIRE(limit.limit() == 50);
  // Its database got slower for good, not fuller: 20 ms whatever the limit. Cut down to the floor,
  // where nothing waits inside it ...
  confirm(300, 20ms);
  CHECK(limit.cuts(Cut::kLatency) >= 5);
  CHECK(limit.limit() <= 2);
  CHECK(limit.baseline_latency() == 1ms);
  // ... and 20 ms is the baseline once the windows that saw 1 ms are gone, and it grows back.
  confirm(25'000, 20ms);
  CHECK(limit.baseline_latency() == 20ms);
  CHECK(limit.limit() == 50);
  const auto cuts = limit.cuts(Cut::kLatency);
  confirm(5'000, 20ms);
  CHECK(limit.cuts(Cut::kLatency) == cuts);
}

TEST_CASE("adaptive limit: follows a handler whose capacity changes, keeping it busy", "[unit]") {
  // 10 ms a delivery; capacity 8, then 2, then 16 at once. Throughput at capacity c is c per 10 ms.
  AdaptiveLimit limit(1, 64);
  SimulatedHandler handler;
  handler.run(limit, 8, 10ms, 5s);  // settles
  const Phase eight = handler.run(limit, 8, 10ms, 10s);
  handler.run(limit, 2, 10ms, 5s);
  const Phase two = handler.run(limit, 2, 10ms, 10s);
  handler.run(limit, 16, 10ms, 5s);
  const Phase sixteen = handler.run(limit, 16, 10ms, 10s);
  INFO("mean limits: " << eight.mean_limit << ", " << two.mean_limit << ", " << sixteen.mean_limit);
  // Near the capacity (between it and the margin latency allows), not at max_inflight's 64 ...
  CHECK(eight.mean_limit >= 6);
  CHECK(eight.mean_limit <= 16);
  CHECK(two.mean_limit >= 1.5);
  CHECK(two.mean_limit <= 5);
  CHECK(sixteen.mean_limit >= 13);
  CHECK(sixteen.mean_limit <= 32);
  // ... and the handler kept at least 85 % busy.
  CHECK(eight.confirmed >= 0.85 * 8 * 1000);
  CHECK(two.confirmed >= 0.85 * 2 * 1000);
  CHECK(sixteen.confirmed >= 0.85 * 16 * 1000);
  CHECK(limit.cuts(Cut::kLatency) >= 2);
}
