// adaptive_inflight (R49): each connection of the handler has an AdaptiveLimit within max_inflight.
#include <algorithm>
#include <catch2/catch.hpp>

#include "core_test_support.hpp"
#include "dispatch_core.hpp"

using namespace jetfan;
using Kind = Effect::Kind;
using std::chrono::milliseconds;

namespace {

const TimePoint kStart{std::chrono::hours(1)};

std::vector<Effect> sent(DispatchCore& core) { return testing::deliveries_of(core); }

std::size_t to(const std::vector<Effect>& effects, ConnectionId connection) {
  return static_cast<std::size_t>(
      std::count_if(effects.begin(), effects.end(), [&](const Effect& e) { return e.connection == connection; }));
}

}  // namespace

TEST_CASE("adaptive_inflight: a connection starts at min_inflight, grows while its handler keeps up, and a NAK cuts it",
          "[unit]") {
  CoreSettings settings = testing::core_settings(2, 32);
  settings.handlers[0].adaptive_inflight = true;
  settings.handlers[0].min_inflight = 2;
  DispatchCore core(settings);
  core.connect(1, 0, kStart);
  core.connect(2, 1, kStart);
  std::uint64_t seq = 0;
  for (; seq < 200; ++seq) core.arrive(Arrival{seq + 1, seq + 1, 1, 0b11}, kStart);
  auto out = sent(core);
  CHECK(to(out, 1) == 2);   // its floor
  CHECK(to(out, 2) == 32);  // the other handler: max_inflight
  CHECK(core.loads()[0].inflight_limit == 2);
  CHECK(core.loads()[1].inflight_limit == 32);

  // ACK each delivery 5 ms after it went: the limit doubles per round up to max_inflight.
  TimePoint now = kStart;
  std::vector<Effect> flying(out.begin(), out.end());
  flying.erase(std::remove_if(flying.begin(), flying.end(), [](const Effect& e) { return e.connection != 1; }),
               flying.end());
  for (int round = 0; round < 6; ++round) {
    now += milliseconds(5);
    std::vector<Effect> next;
    for (const Effect& e : flying) {
      REQUIRE(core.ack(1, e.delivery, now));
      for (const Effect& more : sent(core)) next.push_back(more);
    }
    flying = next;
  }
  CHECK(core.loads()[0].inflight_limit == 32);
  CHECK(core.loads()[0].in_flight == 32);

  // A NAK: 32 x 0.7 = 22, and nothing more goes until fewer than 22 are in flight.
  REQUIRE(core.nak(1, flying[0].delivery, std::nullopt, now));
  CHECK(sent(core).empty());
  CHECK(core.loads()[0].inflight_limit == 22);
  CHECK(core.loads()[0].in_flight == 31);
  const HandlerLoad load = core.loads()[0];
  REQUIRE(load.last_cut.has_value());
  CHECK(*load.last_cut == AdaptiveLimit::Cut::kNak);
  CHECK(load.last_cut_at == now);
  CHECK(core.handler_stats(0).inflight_cuts[static_cast<std::size_t>(AdaptiveLimit::Cut::kNak)] == 1);
  for (std::size_t i = 1; i <= 9; ++i) REQUIRE(core.ack(1, flying[i].delivery, now));
  CHECK(sent(core).empty());
  REQUIRE(core.ack(1, flying[10].delivery, now));  // 21 in flight: room for one
  CHECK(sent(core).size() == 1);
  CHECK(core.loads()[0].inflight_limit == 22);  // what was in flight at the cut grows it no more
}

TEST_CASE(
    "adaptive_inflight: ack_timeouts halve the limit, a WIP'd delivery's latency does not count, never below "
    "min_inflight",
    "[unit]") {
  CoreSettings settings = testing::core_settings(1, 8);
  settings.handlers[0].adaptive_inflight = true;
  settings.handlers[0].min_inflight = 8;  // floor = ceiling: nothing moves it
  DispatchCore core(settings);
  core.connect(1, 0, kStart);
  for (std::uint64_t seq = 1; seq <= 20; ++seq) core.arrive(Arrival{seq, seq, 1, 0b1}, kStart);
  CHECK(sent(core).size() == 8);
  core.tick(kStart + settings.handlers[0].ack_timeout);
  CHECK(core.loads()[0].inflight_limit == 8);
  CHECK(core.handler_stats(0).inflight_cuts[static_cast<std::size_t>(AdaptiveLimit::Cut::kTimeout)] == 0);

  CoreSettings low = testing::core_settings(1, 8);
  low.handlers[0].adaptive_inflight = true;
  low.handlers[0].min_inflight = 1;
  DispatchCore cut(low);
  cut.connect(1, 0, kStart);
  for (std::uint64_t seq = 1; seq <= 20; ++seq) cut.arrive(Arrival{seq, seq, 1, 0b1}, kStart);
  auto out = sent(cut);
  REQUIRE(out.size() == 1);
  // A WIP, then an ACK long after: the handler said it takes long, so no latency cut.
  REQUIRE(cut.wip(1, out[0].delivery, kStart + milliseconds(10)));
  REQUIRE(cut.ack(1, out[0].delivery, kStart + milliseconds(20)));
  CHECK(cut.loads()[0].inflight_limit == 2);
  out = sent(cut);
  REQUIRE(out.size() == 2);
  cut.tick(kStart + milliseconds(20) + low.handlers[0].ack_timeout);
  CHECK(cut.loads()[0].inflight_limit == 1);
  CHECK(cut.handler_stats(0).inflight_cuts[static_cast<std::size_t>(AdaptiveLimit::Cut::kTimeout)] == 1);
}

TEST_CASE(
    "adaptive_inflight: the instance with the most room gets the next delivery, and a reload keeps a limit unless "
    "its bounds changed",
    "[unit]") {
  CoreSettings settings = testing::core_settings(1, 16);
  settings.handlers[0].adaptive_inflight = true;
  settings.handlers[0].min_inflight = 4;
  DispatchCore core(settings);
  core.connect(1, 0, kStart);
  for (std::uint64_t seq = 1; seq <= 4; ++seq) core.arrive(Arrival{seq, seq, 1, 0b1}, kStart);
  auto out = sent(core);
  REQUIRE(out.size() == 4);
  // Only the first ACK came while it used its whole limit: 5.
  for (const Effect& e : out) REQUIRE(core.ack(1, e.delivery, kStart + milliseconds(1)));
  CHECK(core.loads()[0].inflight_limit == 5);
  core.connect(2, 0, kStart);  // starts at 4
  for (std::uint64_t seq = 5; seq <= 10; ++seq) core.arrive(Arrival{seq, seq, 1, 0b1}, kStart);
  out = sent(core);
  CHECK(to(out, 1) == 4);  // rooms 5 and 4: it takes one, then they alternate, the first on ties
  CHECK(to(out, 2) == 2);
  CHECK(core.loads()[0].inflight_limit == 9);

  HandlerReindex same{{0}, settings.handlers, settings.nak_delay, settings.nak_delay_max};
  core.reconfigure(same, kStart);
  CHECK(core.loads()[0].inflight_limit == 9);
  HandlerReindex wider = same;
  wider.handlers[0].max_inflight = 32;
  core.reconfigure(wider, kStart);
  CHECK(core.loads()[0].inflight_limit == 8);  // both start again at min_inflight
  HandlerReindex fixed = wider;
  fixed.handlers[0].adaptive_inflight = false;
  core.reconfigure(fixed, kStart);
  CHECK(core.loads()[0].inflight_limit == 64);
  CHECK(sent(core).empty());  // no more queued
}
