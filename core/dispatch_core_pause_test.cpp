#include <catch2/catch.hpp>

#include "core_test_support.hpp"
#include "dispatch_core.hpp"

using namespace jetfan;
using Kind = Effect::Kind;
using std::chrono::milliseconds;

namespace {

const TimePoint kStart{};

CoreSettings two_handlers() { return testing::core_settings(2); }

std::vector<Effect> take(DispatchCore& core, Kind kind) {
  return testing::effects_of(testing::take_effects(core), kind);
}

}  // namespace

TEST_CASE("a paused handler gets nothing new, and its messages are held for it until it resumes", "[unit]") {
  DispatchCore core(two_handlers());
  core.connect(1, 0, kStart);
  core.connect(2, 1, kStart);
  core.set_paused(0, true, kStart);
  CHECK(core.paused(0));
  core.arrive(Arrival{1, 1, 1, 0b11}, kStart);
  auto sent = take(core, Kind::kDeliver);
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].connection == 2);
  REQUIRE(core.ack(2, sent[0].delivery, kStart));
  CHECK(take(core, Kind::kAck).empty());  // held for the paused one
  // Kept alive at the server meanwhile, not redelivered.
  core.tick(kStart + milliseconds(600));
  CHECK(take(core, Kind::kWip).size() == 1);
  CHECK(core.loads()[0].queued == 1);
  core.set_paused(0, false, kStart + milliseconds(700));
  sent = take(core, Kind::kDeliver);
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].connection == 1);
  REQUIRE(core.ack(1, sent[0].delivery, kStart + milliseconds(700)));
  CHECK(take(core, Kind::kAck).size() == 1);
}

TEST_CASE("another handler's failure does not wait for a paused handler", "[unit]") {
  DispatchCore core(two_handlers());
  core.connect(1, 0, kStart);
  core.connect(2, 1, kStart);
  core.set_paused(0, true, kStart);
  core.arrive(Arrival{1, 1, 1, 0b11}, kStart);
  const auto sent = take(core, Kind::kDeliver);
  REQUIRE(sent.size() == 1);
  REQUIRE(core.nak(2, sent[0].delivery, std::nullopt, kStart));
  CHECK(take(core, Kind::kNak).size() == 1);
  CHECK(core.held() == 0);
}

TEST_CASE("pausing lets deliveries in flight finish", "[unit]") {
  DispatchCore core(two_handlers());
  core.connect(1, 0, kStart);
  core.arrive(Arrival{1, 1, 1, 0b01}, kStart);
  const auto sent = take(core, Kind::kDeliver);
  REQUIRE(sent.size() == 1);
  core.set_paused(0, true, kStart);
  core.arrive(Arrival{2, 2, 1, 0b01}, kStart);
  CHECK(take(core, Kind::kDeliver).empty());
  REQUIRE(core.ack(1, sent[0].delivery, kStart));
  auto effects = take(core, Kind::kAck);
  CHECK(effects.size() == 1);
  CHECK(core.held() == 1);
}
