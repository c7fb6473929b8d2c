// max_rate (R48): a handler's deliveries held to its TokenBucket, the others' not.
#include <catch2/catch.hpp>

#include "core_test_support.hpp"
#include "dispatch_core.hpp"

using namespace jetfan;
using Kind = Effect::Kind;
using std::chrono::milliseconds;

namespace {

const TimePoint kStart{std::chrono::hours(1)};

std::vector<Effect> sent(DispatchCore& core) { return testing::deliveries_of(core); }

}  // namespace

TEST_CASE("a handler with max_rate gets its burst at once, then one per token, the other handler everything",
          "[unit]") {
  CoreSettings settings = testing::core_settings(2, 16);
  settings.handlers[0].max_rate = 20;  // a burst of 2, then one each 50 ms
  DispatchCore core(settings);
  core.connect(1, 0, kStart);
  core.connect(2, 1, kStart);
  for (std::uint64_t seq = 1; seq <= 5; ++seq) core.arrive(Arrival{seq, seq, 1, 0b11}, kStart);
  auto out = sent(core);
  CHECK(std::count_if(out.begin(), out.end(), [](const Effect& e) { return e.connection == 1; }) == 2);
  CHECK(std::count_if(out.begin(), out.end(), [](const Effect& e) { return e.connection == 2; }) == 5);
  CHECK(core.loads()[0].rate_waiting);
  CHECK(core.loads()[0].queued == 3);
  CHECK_FALSE(core.loads()[1].rate_waiting);
  REQUIRE(core.next_wakeup());
  CHECK(*core.next_wakeup() == kStart + milliseconds(50));

  core.tick(kStart + milliseconds(49));
  CHECK(sent(core).empty());
  core.tick(kStart + milliseconds(50));
  out = sent(core);
  REQUIRE(out.size() == 1);
  CHECK(out[0].connection == 1);
  core.tick(kStart + milliseconds(200));  // two more tokens by now, and the last two go
  CHECK(sent(core).size() == 2);
  CHECK_FALSE(core.loads()[0].rate_waiting);
  CHECK(core.loads()[0].queued == 0);
}

TEST_CASE("a handler waiting for a token wakes nobody while it has no room, and a reload can lift its max_rate",
          "[unit]") {
  CoreSettings settings = testing::core_settings(1);
  settings.handlers[0].max_rate = 1;  // a burst of 1
  settings.handlers[0].max_inflight = 1;
  DispatchCore core(settings);
  core.connect(1, 0, kStart);
  for (std::uint64_t seq = 1; seq <= 3; ++seq) core.arrive(Arrival{seq, seq, 1, 0b1}, kStart);
  auto out = sent(core);
  REQUIRE(out.size() == 1);
  // No room: what waits, waits for room, not a token; no wakeup for a token.
  CHECK_FALSE(core.loads()[0].rate_waiting);
  REQUIRE(core.ack(1, out[0].delivery, kStart + milliseconds(10)));
  CHECK(sent(core).empty());
  CHECK(core.loads()[0].rate_waiting);
  CHECK(*core.next_wakeup() <= kStart + milliseconds(1000));  // the keepalive may come first
  core.tick(kStart + milliseconds(999));
  CHECK(sent(core).empty());
  core.tick(kStart + milliseconds(1000));
  out = sent(core);
  REQUIRE(out.size() == 1);
  REQUIRE(core.ack(1, out[0].delivery, kStart + milliseconds(1000)));

  HandlerReindex reindex;
  reindex.old_to_new = {0};
  reindex.handlers = settings.handlers;
  reindex.handlers[0].max_rate = 0;
  reindex.handlers[0].max_inflight = 8;
  core.reconfigure(reindex, kStart + milliseconds(1010));
  CHECK(sent(core).size() == 1);
  CHECK_FALSE(core.loads()[0].rate_waiting);
}

TEST_CASE("a reload keeps a handler's bucket while its max_rate is the same, and a new max_rate starts full",
          "[unit]") {
  CoreSettings settings = testing::core_settings(1, 16);
  settings.handlers[0].max_rate = 1;  // a burst of 1
  DispatchCore core(settings);
  core.connect(1, 0, kStart);
  for (std::uint64_t seq = 1; seq <= 3; ++seq) core.arrive(Arrival{seq, seq, 1, 0b1}, kStart);
  CHECK(sent(core).size() == 1);
  HandlerReindex reindex;
  reindex.old_to_new = {0};
  reindex.handlers = settings.handlers;
  core.reconfigure(reindex, kStart + milliseconds(10));  // the same max_rate: no new burst
  CHECK(sent(core).empty());
  reindex.handlers[0].max_rate = 2;
  core.reconfigure(reindex, kStart + milliseconds(20));  // a new one: its bucket starts full
  CHECK(sent(core).size() == 1);
}
