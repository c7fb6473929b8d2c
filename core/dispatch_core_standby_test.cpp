// Standing by (docs/dispatch-rules.md R46): a pinned_client reader that lost its pin hands back what
// it holds, delivers nothing new, lets deliveries in flight finish, and serves again once it resumes.

#include <catch2/catch.hpp>

#include "core_test_support.hpp"
#include "dispatch_core.hpp"

using namespace jetfan;
using Kind = Effect::Kind;
using std::chrono::milliseconds;

namespace {

const TimePoint kStart{};

std::vector<Effect> take(DispatchCore& core, Kind kind) {
  return testing::effects_of(testing::take_effects(core), kind);
}

}  // namespace

TEST_CASE("standing by hands back at once what is not in flight, and lets the rest finish", "[unit]") {
  DispatchCore core(testing::core_settings(1, 1));
  core.connect(1, 0, kStart);
  core.arrive(Arrival{1, 1, 1, 0b1}, kStart);
  core.arrive(Arrival{2, 2, 1, 0b1}, kStart);  // queued behind max_inflight 1
  const auto sent = take(core, Kind::kDeliver);
  REQUIRE(sent.size() == 1);
  core.stand_by(kStart + milliseconds(10), Duration(0));
  CHECK(core.standing_by());
  auto effects = testing::take_effects(core);
  const auto naks = testing::effects_of(effects, Kind::kNak);
  REQUIRE(naks.size() == 1);
  CHECK(naks[0].message == 2);
  CHECK(naks[0].delay == Duration(0));  // the pinned reader gets it now
  // The one in flight is confirmed, and acked at the server.
  REQUIRE(core.ack(1, sent[0].delivery, kStart + milliseconds(20)));
  CHECK(take(core, Kind::kAck).size() == 1);
  CHECK(core.held() == 0);
}

TEST_CASE("a standby delivers nothing: an arrival and a failure go back to the server", "[unit]") {
  DispatchCore core(testing::core_settings(1));
  core.connect(1, 0, kStart);
  core.arrive(Arrival{1, 1, 1, 0b1}, kStart);
  const auto sent = take(core, Kind::kDeliver);
  core.stand_by(kStart, Duration(0));
  REQUIRE(core.nak(1, sent[0].delivery, std::nullopt, kStart));
  CHECK(take(core, Kind::kNak).size() == 1);
  core.arrive(Arrival{2, 2, 1, 0b1}, kStart);
  auto effects = testing::take_effects(core);
  CHECK(testing::effects_of(effects, Kind::kDeliver).empty());
  CHECK(testing::effects_of(effects, Kind::kNak).size() == 1);
  CHECK(core.held() == 0);
}

TEST_CASE("once it resumes it delivers again, and a jump in delivery numbers is no loss", "[unit]") {
  DispatchCore core(testing::core_settings(1));
  core.connect(1, 0, kStart);
  Arrival first{1, 1, 1, 0b1};
  first.consumer_seq = 1;
  core.arrive(first, kStart);
  REQUIRE(core.ack(1, take(core, Kind::kDeliver)[0].delivery, kStart));
  core.stand_by(kStart, Duration(0));
  core.resume(kStart + milliseconds(100));
  CHECK_FALSE(core.standing_by());
  Arrival later{2, 40, 1, 0b1};
  later.consumer_seq = 90;  // the other reader had 2..89
  core.arrive(later, kStart + milliseconds(200));
  CHECK(take(core, Kind::kDeliver).size() == 1);
  CHECK_FALSE(core.gap_held());
  CHECK(core.counters().delivery_gaps == 0);
}

TEST_CASE("a standby's hand-backs wait the delay it is given, past its own requests at the server", "[unit]") {
  DispatchCore core(testing::core_settings(1, 1));
  core.connect(1, 0, kStart);
  core.arrive(Arrival{1, 1, 1, 0b1}, kStart);
  core.arrive(Arrival{2, 2, 1, 0b1}, kStart);
  take(core, Kind::kDeliver);
  core.stand_by(kStart, milliseconds(6000));
  const auto naks = take(core, Kind::kNak);
  REQUIRE(naks.size() == 1);
  CHECK(naks[0].delay == milliseconds(6000));
  core.arrive(Arrival{3, 3, 1, 0b1}, kStart + milliseconds(1000));
  const auto later = take(core, Kind::kNak);
  REQUIRE(later.size() == 1);
  CHECK(later[0].delay == milliseconds(5000));
}

TEST_CASE("what a standby hands back leaves the order gate: after it resumes, the key goes on", "[unit]") {
  DispatchCore core(testing::core_settings(1, 8));
  core.connect(1, 0, kStart);
  auto keyed = [](std::uint64_t seq) { return Arrival{seq, seq, 1, 0b1, false, {OrderKey{0, "k"}}}; };
  core.arrive(keyed(10), kStart);
  core.arrive(keyed(11), kStart);  // gated behind 10
  const auto first = take(core, Kind::kDeliver);
  REQUIRE(first.size() == 1);
  CHECK(first[0].message == 10);
  core.stand_by(kStart, Duration(0));  // 11 goes to the pinned reader, which acks it
  CHECK(take(core, Kind::kNak).size() == 1);
  REQUIRE(core.ack(1, first[0].delivery, kStart));
  take(core, Kind::kAck);
  core.resume(kStart + milliseconds(100));
  // The pin came back; 50, of the same key, is not held for 11, which will never come again.
  core.arrive(keyed(50), kStart + milliseconds(200));
  const auto next = take(core, Kind::kDeliver);
  REQUIRE(next.size() == 1);
  CHECK(next[0].message == 50);
}

TEST_CASE("a standby keeps nothing alive at the server: the new owner gets what is in flight after AckWait", "[unit]") {
  // R47: kept alive, a message in flight on the old owner would outlast the new owner's restart
  // hold, and its key's later messages would run there first.
  CoreSettings settings = testing::core_settings(1);
  settings.handlers[0].ack_timeout = std::chrono::minutes(1);  // the handler works on, and says WIP
  DispatchCore core(settings);
  core.connect(1, 0, kStart);
  core.arrive(Arrival{1, 1, 1, 0b1, false, {OrderKey{0, "k"}}}, kStart);
  REQUIRE(take(core, Kind::kDeliver).size() == 1);
  // Serving, it is kept alive every keepalive while the handler works (WIP on the socket).
  core.tick(kStart + settings.keepalive * 2);
  CHECK(take(core, Kind::kWip).size() == 1);
  core.stand_by(kStart + settings.keepalive * 2, Duration(0));
  testing::take_effects(core);
  for (int turn = 3; turn < 12; ++turn) core.tick(kStart + settings.keepalive * turn);
  CHECK(take(core, Kind::kWip).empty());
  CHECK(core.in_flight() == 1);  // still the handler's to confirm
  core.resume(kStart + settings.keepalive * 12);
  core.tick(kStart + settings.keepalive * 13);
  CHECK(take(core, Kind::kWip).size() == 1);  // pinned again: kept alive again
}
