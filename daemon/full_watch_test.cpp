// FullWatch on its own, over a real DispatchCore: what it hands back when jetfan is full, and whom
// it names when nothing settles.

#include <catch2/catch.hpp>

#include "core_test_support.hpp"
#include "full_watch.hpp"

using namespace jetfan;
using std::chrono::milliseconds;

namespace {

Config two_handlers(WhenFull first) {
  Config config;
  HandlerSettings slow;
  slow.name = "slow";
  slow.when_full = first;
  HandlerSettings fast;
  fast.name = "fast";
  config.handlers = {slow, fast};
  return config;
}

// `n` messages for both handlers, arrived at `now`.
void arrive(DispatchCore& core, std::uint64_t n, TimePoint now) {
  for (std::uint64_t seq = 1; seq <= n; ++seq) {
    Arrival arrival;
    arrival.message = seq;
    arrival.stream_seq = seq;
    arrival.recipients = 0b11;
    core.arrive(arrival, now);
  }
}

}  // namespace

TEST_CASE("full watch: full, a hand_back handler past its share hands its oldest back, and only then", "[unit]") {
  const Config config = two_handlers(WhenFull::kHandBack);
  const PullSettings pull{4, 8, 0, milliseconds(1000), milliseconds(500)};
  RateLimitedLog warnings(5, milliseconds(10000));
  FullWatch watch(config, pull, warnings);
  DispatchCore core(testing::core_settings(2));
  const TimePoint t0{};
  core.connect(1, 1, t0);  // fast has an instance; slow has none, and owes all 8
  arrive(core, 8, t0);
  testing::take_effects(core);
  watch.act(core, false, 0, t0);
  CHECK(testing::take_effects(core).empty());  // not full: nothing
  watch.act(core, true, 0, t0);
  CHECK(core.counters().handed_back_for_room == 4);
  CHECK(core.loads()[0].queued == 4);  // it keeps its share: 8 held, 2 handlers
  CHECK(core.loads()[1].owed == 8);    // fast still gets every one
  CHECK_FALSE(watch.stall().stalled());
}

TEST_CASE("full watch: full with nothing settling names the handler that holds everyone up", "[unit]") {
  const Config config = two_handlers(WhenFull::kHold);
  const PullSettings pull{4, 8, 0, milliseconds(1000), milliseconds(500)};
  RateLimitedLog warnings(5, milliseconds(10000));
  FullWatch watch(config, pull, warnings);
  DispatchCore core(testing::core_settings(2));
  const TimePoint t0{};
  core.connect(1, 1, t0);
  arrive(core, 8, t0);
  testing::take_effects(core);
  watch.act(core, true, 0, t0);
  watch.act(core, true, 0, t0 + milliseconds(4999));
  CHECK_FALSE(watch.stall().stalled());
  watch.act(core, true, 0, t0 + milliseconds(5000));
  REQUIRE(watch.stall().stalled());
  CHECK(watch.stall().stalled_by() == 0);  // slow: everything waits for it, nothing is in flight to it
  CHECK(testing::effects_of(testing::take_effects(core), Effect::Kind::kNak).empty());  // when_full: hold
  watch.act(core, false, 0, t0 + milliseconds(6000));
  CHECK_FALSE(watch.stall().stalled());
}
