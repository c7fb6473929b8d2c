#include <catch2/catch.hpp>

#include "core_test_support.hpp"
#include "dispatch_core.hpp"

using namespace jetfan;
using Kind = Effect::Kind;
using std::chrono::milliseconds;

namespace {

const TimePoint kStart{};

// Two handlers; handler 0 has dead letters and max_attempts 2, with a backoff of 100 ms.
CoreSettings settings() {
  CoreSettings s = testing::core_settings(2);
  s.handlers[0].retry = RetryPolicy{2, milliseconds(100), milliseconds(100), true};
  return s;
}

std::vector<Effect> take(DispatchCore& core, Kind kind) {
  return testing::effects_of(testing::take_effects(core), kind);
}

}  // namespace

TEST_CASE("a redrive goes to its one handler and settles with its own effect, nothing to the server", "[unit]") {
  DispatchCore core(settings());
  core.connect(1, 0, kStart);
  core.connect(2, 1, kStart);
  REQUIRE(core.redrive(Redrive{7, 41, 0, std::nullopt}, kStart));
  auto effects = testing::take_effects(core);
  auto sent = testing::effects_of(effects, Kind::kDeliver);
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].connection == 1);
  CHECK(sent[0].message == 7);
  core.tick(kStart + milliseconds(600));  // past the keepalive: no +WPI for it
  CHECK(take(core, Kind::kWip).empty());
  REQUIRE(core.ack(1, sent[0].delivery, kStart + milliseconds(600)));
  effects = testing::take_effects(core);
  const auto settled = testing::effects_of(effects, Kind::kRedriveSettled);
  REQUIRE(settled.size() == 1);
  CHECK(settled[0].redrive == 41);
  CHECK(settled[0].handler == 0);
  CHECK_FALSE(settled[0].again);
  CHECK(testing::effects_of(effects, Kind::kRelease).size() == 1);
  CHECK(testing::effects_of(effects, Kind::kAck).empty());
  CHECK(testing::effects_of(effects, Kind::kTerm).empty());
  CHECK(core.held() == 0);
  CHECK(core.redrives_held() == 0);
}

TEST_CASE("a failed redrive is retried inside the core after the handler's backoff, never nak'd", "[unit]") {
  DispatchCore core(settings());
  core.connect(1, 0, kStart);
  REQUIRE(core.redrive(Redrive{7, 41, 0, std::nullopt}, kStart));
  auto sent = take(core, Kind::kDeliver);
  REQUIRE(sent.size() == 1);
  REQUIRE(core.nak(1, sent[0].delivery, std::nullopt, kStart));
  auto effects = testing::take_effects(core);
  CHECK(testing::effects_of(effects, Kind::kNak).empty());
  CHECK(testing::effects_of(effects, Kind::kDeliver).empty());
  core.tick(kStart + milliseconds(50));
  CHECK(take(core, Kind::kDeliver).empty());
  core.tick(kStart + milliseconds(100));
  sent = take(core, Kind::kDeliver);
  REQUIRE(sent.size() == 1);
  REQUIRE(core.ack(1, sent[0].delivery, kStart + milliseconds(100)));
  CHECK(take(core, Kind::kRedriveSettled).size() == 1);
}

TEST_CASE("a redrive whose budget is used up is dead-lettered again, and settled once that is stored", "[unit]") {
  DispatchCore core(settings());
  core.connect(1, 0, kStart);
  REQUIRE(core.redrive(Redrive{7, 41, 0, std::nullopt}, kStart));
  auto sent = take(core, Kind::kDeliver);
  REQUIRE(core.nak(1, sent[0].delivery, std::nullopt, kStart));
  core.tick(kStart + milliseconds(100));
  sent = take(core, Kind::kDeliver);
  REQUIRE(sent.size() == 1);
  REQUIRE(core.nak(1, sent[0].delivery, std::nullopt, kStart + milliseconds(100)));
  auto letters = take(core, Kind::kDeadLetter);
  REQUIRE(letters.size() == 1);
  CHECK(letters[0].message == 7);
  CHECK(letters[0].reason.attempts == 2);
  // A failed publish keeps it; the old dead letter must stay until the new one is stored.
  REQUIRE(core.dead_letter_failed(letters[0].publish, kStart + milliseconds(100)));
  CHECK(take(core, Kind::kRedriveSettled).empty());
  core.tick(kStart + milliseconds(300));
  letters = take(core, Kind::kDeadLetter);
  REQUIRE(letters.size() == 1);
  REQUIRE(core.dead_letter_stored(letters[0].publish, kStart + milliseconds(300)));
  const auto settled = take(core, Kind::kRedriveSettled);
  REQUIRE(settled.size() == 1);
  CHECK(settled[0].again);
  CHECK(core.held() == 0);
}

TEST_CASE("a TERM of a redrive is a new dead letter before the old one may go", "[unit]") {
  DispatchCore core(settings());
  core.connect(1, 0, kStart);
  REQUIRE(core.redrive(Redrive{7, 41, 0, std::nullopt}, kStart));
  const auto sent = take(core, Kind::kDeliver);
  REQUIRE(core.term(1, sent[0].delivery, kStart));
  auto effects = testing::take_effects(core);
  const auto letters = testing::effects_of(effects, Kind::kDeadLetter);
  REQUIRE(letters.size() == 1);
  CHECK(letters[0].reason.termed);
  CHECK(testing::effects_of(effects, Kind::kRedriveSettled).empty());
  CHECK(testing::effects_of(effects, Kind::kTerm).empty());
  REQUIRE(core.dead_letter_stored(letters[0].publish, kStart));
  CHECK(take(core, Kind::kRedriveSettled).size() == 1);
}

TEST_CASE("a drain drops a redrive not confirmed: the old dead letter stays", "[unit]") {
  DispatchCore core(settings());
  core.connect(1, 0, kStart);
  REQUIRE(core.redrive(Redrive{7, 41, 0, std::nullopt}, kStart));
  REQUIRE(core.redrive(Redrive{8, 42, 1, std::nullopt}, kStart));  // handler 1 has no instance
  REQUIRE(take(core, Kind::kDeliver).size() == 1);
  core.begin_drain(kStart, milliseconds(0));
  auto effects = testing::take_effects(core);
  auto dropped = testing::effects_of(effects, Kind::kRedriveDropped);
  REQUIRE(dropped.size() == 1);
  CHECK(dropped[0].redrive == 42);
  CHECK(testing::effects_of(effects, Kind::kNak).empty());
  core.abandon_all(kStart);
  effects = testing::take_effects(core);
  dropped = testing::effects_of(effects, Kind::kRedriveDropped);
  REQUIRE(dropped.size() == 1);
  CHECK(dropped[0].redrive == 41);
  CHECK(testing::effects_of(effects, Kind::kRedriveSettled).empty());
  CHECK(testing::effects_of(effects, Kind::kNak).empty());
  CHECK_FALSE(core.redrive(Redrive{9, 43, 0, std::nullopt}, kStart));
}

TEST_CASE("a redrive held already, or for no such handler, is refused", "[unit]") {
  DispatchCore core(settings());
  REQUIRE(core.redrive(Redrive{7, 41, 0, std::nullopt}, kStart));
  CHECK_FALSE(core.redrive(Redrive{8, 41, 0, std::nullopt}, kStart));
  CHECK_FALSE(core.redrive(Redrive{8, 42, 5, std::nullopt}, kStart));
  CHECK(core.redrives_held() == 1);
}

TEST_CASE("a paused handler's redrive waits for it to resume", "[unit]") {
  DispatchCore core(settings());
  core.connect(1, 0, kStart);
  core.set_paused(0, true, kStart);
  REQUIRE(core.redrive(Redrive{7, 41, 0, std::nullopt}, kStart));
  CHECK(take(core, Kind::kDeliver).empty());
  core.set_paused(0, false, kStart);
  CHECK(take(core, Kind::kDeliver).size() == 1);
}

TEST_CASE("a reload removing the handler drops its redrive", "[unit]") {
  DispatchCore core(settings());
  REQUIRE(core.redrive(Redrive{7, 41, 0, std::nullopt}, kStart));
  HandlerReindex reindex;
  reindex.old_to_new = {std::nullopt, 0};
  reindex.handlers = {settings().handlers[1]};
  reindex.nak_delay = milliseconds(100);
  reindex.nak_delay_max = milliseconds(1000);
  core.reconfigure(reindex, kStart);
  const auto dropped = take(core, Kind::kRedriveDropped);
  REQUIRE(dropped.size() == 1);
  CHECK(dropped[0].redrive == 41);
}

TEST_CASE("an ordered handler gets a redrive after the messages of its key it holds, one at a time", "[unit]") {
  DispatchCore core(settings());
  core.connect(1, 0, kStart);
  Arrival first{1, 10, 1, 0b01};
  first.order = {OrderKey{0, "k"}};
  core.arrive(first, kStart);
  auto sent = take(core, Kind::kDeliver);
  REQUIRE(sent.size() == 1);
  REQUIRE(core.redrive(Redrive{7, 41, 0, std::string("k")}, kStart));
  CHECK(take(core, Kind::kDeliver).empty());  // waits behind seq 10 of its key
  REQUIRE(core.ack(1, sent[0].delivery, kStart));
  auto effects = testing::take_effects(core);
  sent = testing::effects_of(effects, Kind::kDeliver);
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].message == 7);
  // Another key is not held up by it.
  Arrival other{2, 11, 1, 0b01};
  other.order = {OrderKey{0, "j"}};
  core.arrive(other, kStart);
  CHECK(take(core, Kind::kDeliver).size() == 1);
  REQUIRE(core.ack(1, sent[0].delivery, kStart));
  CHECK(take(core, Kind::kRedriveSettled).size() == 1);
}
