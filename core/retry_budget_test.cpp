#include <catch2/catch.hpp>

#include "core_test_support.hpp"
#include "dispatch_core.hpp"
#include "retry_budget.hpp"

using namespace jetfan;
using Kind = Effect::Kind;
using std::chrono::milliseconds;

namespace {

const TimePoint kStart{};

// Handler 0 may fail a message `max_attempts` times; handler 1 retries for ever.
CoreSettings budget_settings(std::uint32_t max_attempts, bool dead_letter) {
  CoreSettings s = testing::core_settings(2);
  s.handlers[0].retry = RetryPolicy{max_attempts, milliseconds(10), milliseconds(40), dead_letter};
  return s;
}

std::vector<Effect> take(DispatchCore& core) { return testing::take_effects(core); }

std::vector<Effect> of(const std::vector<Effect>& all, Kind kind) { return testing::effects_of(all, kind); }

// Delivers seq to connection 1 (handler 0) until it has failed `times` by NAK, redelivering from
// the server after each hand-back. Returns the effects of the last NAK.
std::vector<Effect> nak_times(DispatchCore& core, std::uint64_t seq, HandlerMask recipients, int times,
                              std::uint64_t& deliveries) {
  std::vector<Effect> last;
  for (int i = 0; i < times; ++i) {
    core.arrive(Arrival{seq * 100 + deliveries, seq, deliveries, recipients}, kStart);
    ++deliveries;
    auto sent = of(take(core), Kind::kDeliver);
    REQUIRE_FALSE(sent.empty());
    for (const auto& d : sent) {
      if (d.connection == 1) {
        REQUIRE(core.nak(1, d.delivery, std::nullopt, kStart));
      } else {
        REQUIRE(core.ack(d.connection, d.delivery, kStart));
      }
    }
    last = take(core);
  }
  return last;
}

}  // namespace

TEST_CASE("the retry backoff doubles from backoff up to backoff_max", "[unit]") {
  CHECK(RetryBudget::delay(1, milliseconds(10), milliseconds(40)) == milliseconds(10));
  CHECK(RetryBudget::delay(2, milliseconds(10), milliseconds(40)) == milliseconds(20));
  CHECK(RetryBudget::delay(3, milliseconds(10), milliseconds(40)) == milliseconds(40));
  CHECK(RetryBudget::delay(30, milliseconds(10), milliseconds(40)) == milliseconds(40));
}

TEST_CASE("attempts are counted per handler and message, and kept across a hand-back", "[unit]") {
  RetryBudget budget(2);
  CHECK(budget.count_failure(7, 0, FailCause::kNak) == 1);
  CHECK(budget.count_failure(7, 1, FailCause::kTimeout) == 1);
  CHECK(budget.count_failure(7, 0, FailCause::kDisconnect) == 2);
  CHECK(budget.count_failure(8, 0, FailCause::kNak) == 1);
  budget.handed_back(7);
  budget.held_again(7);
  CHECK(budget.attempts(7, 0) == 2);
  // Only the `remember` latest handed back are kept.
  budget.count_failure(9, 0, FailCause::kNak);
  budget.handed_back(7);
  budget.handed_back(8);
  budget.handed_back(9);
  CHECK(budget.attempts(7, 0) == 0);
  CHECK(budget.attempts(8, 0) == 1);
  CHECK(budget.attempts(9, 0) == 1);
  budget.forget(8);
  CHECK(budget.attempts(8, 0) == 0);
}

TEST_CASE("deliveries to a handler: its failures and one, from the server's first delivery on", "[unit]") {
  RetryBudget budget(2);
  CHECK(budget.deliveries_to(7, 0, 1) == 1);  // nothing failed: the server's count
  budget.count_failure(7, 0, FailCause::kNak, 1);
  CHECK(budget.deliveries_to(7, 0, 1) == 2);  // retried inside jetfan: the server's count stays 1
  CHECK(budget.deliveries_to(7, 1, 2) == 1);  // another handler never had it, whatever the server says
  budget.count_failure(7, 0, FailCause::kTimeout, 1);
  budget.handed_back(7);
  budget.held_again(7);
  CHECK(budget.deliveries_to(7, 0, 2) == 3);
}

TEST_CASE("deliveries to a handler: what jetfan does not remember is the server's count", "[unit]") {
  RetryBudget budget(1);
  // Came for the third time when jetfan first saw it (a restart): those two may have reached anyone.
  CHECK(budget.deliveries_to(5, 0, 3) == 3);
  budget.count_failure(5, 0, FailCause::kNak, 3);
  CHECK(budget.deliveries_to(5, 0, 4) == 4);
  CHECK(budget.deliveries_to(5, 1, 4) == 3);  // a bound from above for a handler that did not fail
  // Forgotten (more than `remember` handed back since): the server's count again.
  budget.handed_back(5);
  budget.count_failure(6, 0, FailCause::kNak, 1);
  budget.handed_back(6);
  CHECK(budget.deliveries_to(5, 0, 5) == 5);
  CHECK(budget.deliveries_to(5, 0, 0) == 1);  // never below 1
}

TEST_CASE("a reload moves counts and pending dead letters to the handler's new index", "[unit]") {
  RetryBudget budget(10);
  budget.count_failure(1, 0, FailCause::kNak);
  budget.count_failure(1, 1, FailCause::kNak);
  const auto id = budget.begin_publish(1, 1, GiveUpReason{true});
  budget.reindex({std::nullopt, 0});
  CHECK(budget.attempts(1, 0) == 1);
  CHECK(budget.publishing(1, 0));
  CHECK_FALSE(budget.publishing(1, 1));
  const auto stored = budget.stored(id);
  REQUIRE(stored);
  CHECK(stored->handler == 0);
  CHECK_FALSE(budget.publishing(1));
}

TEST_CASE("a handler's failures below max_attempts hand the message back with its own backoff", "[unit]") {
  DispatchCore core(budget_settings(3, true));
  core.connect(1, 0, kStart);
  core.connect(2, 1, kStart);
  std::uint64_t deliveries = 1;
  auto last = nak_times(core, 5, 0b01, 1, deliveries);
  auto naks = of(last, Kind::kNak);
  REQUIRE(naks.size() == 1);
  CHECK(naks[0].delay == milliseconds(10));
  last = nak_times(core, 5, 0b01, 1, deliveries);
  naks = of(last, Kind::kNak);
  REQUIRE(naks.size() == 1);
  CHECK(naks[0].delay == milliseconds(20));
  CHECK(core.budget().attempts(5, 0) == 2);
}

TEST_CASE("a used-up budget with a dead letter is settled only once the publish is stored", "[unit]") {
  DispatchCore core(budget_settings(3, true));
  core.connect(1, 0, kStart);
  core.connect(2, 1, kStart);
  std::uint64_t deliveries = 1;
  nak_times(core, 5, 0b11, 1, deliveries);  // handler 1 acks the first delivery
  auto last = nak_times(core, 5, 0b11, 2, deliveries);
  // The third failure used up the budget: a dead letter, nothing to the server yet.
  auto dead = of(last, Kind::kDeadLetter);
  REQUIRE(dead.size() == 1);
  CHECK(dead[0].handler == 0);
  CHECK(dead[0].reason.attempts == 3);
  CHECK(describe(dead[0].reason) == "max_attempts 3 used up; last: nak");
  CHECK(of(last, Kind::kNak).empty());
  CHECK(of(last, Kind::kAck).empty());
  CHECK(core.held() == 1);
  CHECK(core.loads()[0].owed == 1);

  // The publish fails: still held, tried again after the backoff; kept alive meanwhile.
  REQUIRE(core.dead_letter_failed(dead[0].publish, kStart));
  CHECK_FALSE(core.dead_letter_failed(dead[0].publish, kStart));  // answered already
  CHECK(take(core).empty());
  REQUIRE(core.next_wakeup());
  CHECK(*core.next_wakeup() == kStart + milliseconds(10));
  core.tick(kStart + milliseconds(10));
  auto again = of(take(core), Kind::kDeadLetter);
  REQUIRE(again.size() == 1);
  CHECK(again[0].publish != dead[0].publish);
  CHECK(core.handler_stats(0).dead_letter_failures == 1);
  CHECK(core.held() == 1);

  // Stored: now every recipient has settled, and the message is acked.
  REQUIRE(core.dead_letter_stored(again[0].publish, kStart + milliseconds(11)));
  auto done = take(core);
  CHECK(of(done, Kind::kAck).size() == 1);
  CHECK(of(done, Kind::kRelease).size() == 1);
  CHECK(core.held() == 0);
  CHECK(core.handler_stats(0).dead_lettered_used_up == 1);
  CHECK(core.counters().dead_lettered == 1);
  CHECK(core.handler_stats(0).attempts.count() == 1);
  CHECK(core.handler_stats(1).delivered == 1);  // the other handler got it once
}

TEST_CASE("a TERM from a handler with dead letters is published, not terminated", "[unit]") {
  DispatchCore core(budget_settings(0, true));
  core.connect(1, 0, kStart);
  core.arrive(Arrival{1, 1, 1, 0b01}, kStart);
  const auto sent = of(take(core), Kind::kDeliver);
  REQUIRE(sent.size() == 1);
  REQUIRE(core.term(1, sent[0].delivery, kStart));
  auto effects = take(core);
  auto dead = of(effects, Kind::kDeadLetter);
  REQUIRE(dead.size() == 1);
  CHECK(dead[0].reason.termed);
  CHECK(of(effects, Kind::kTerm).empty());
  REQUIRE(core.dead_letter_stored(dead[0].publish, kStart));
  CHECK(of(take(core), Kind::kAck).size() == 1);
  CHECK(core.handler_stats(0).dead_lettered_term == 1);
}

TEST_CASE("a used-up budget without a dead letter is a TERM for that handler, reported", "[unit]") {
  DispatchCore core(budget_settings(2, false));
  core.connect(1, 0, kStart);
  std::uint64_t deliveries = 1;
  auto last = nak_times(core, 3, 0b01, 2, deliveries);
  auto gave_up = of(last, Kind::kGaveUp);
  REQUIRE(gave_up.size() == 1);
  CHECK(gave_up[0].reason.attempts == 2);
  CHECK(of(last, Kind::kTerm).size() == 1);
  CHECK(core.counters().gave_up == 1);
  CHECK(core.held() == 0);
}

TEST_CASE("a message being dead-lettered waits for the publish before another's failure hands it back", "[unit]") {
  DispatchCore core(budget_settings(1, true));
  core.connect(1, 0, kStart);
  core.connect(2, 1, kStart);
  core.arrive(Arrival{1, 1, 1, 0b11}, kStart);
  const auto sent = of(take(core), Kind::kDeliver);
  REQUIRE(sent.size() == 2);
  for (const auto& d : sent) REQUIRE(core.nak(d.connection, d.delivery, std::nullopt, kStart));
  auto effects = take(core);
  auto dead = of(effects, Kind::kDeadLetter);
  REQUIRE(dead.size() == 1);
  CHECK(of(effects, Kind::kNak).empty());
  REQUIRE(core.dead_letter_stored(dead[0].publish, kStart));
  effects = take(core);
  REQUIRE(of(effects, Kind::kNak).size() == 1);
  // Redelivered: only handler 1 still owes it.
  core.arrive(Arrival{2, 1, 2, 0b11}, kStart);
  const auto again = of(take(core), Kind::kDeliver);
  REQUIRE(again.size() == 1);
  CHECK(again[0].connection == 2);
}

TEST_CASE("a drain hands back a message whose dead letter was not yet stored", "[unit]") {
  DispatchCore core(budget_settings(1, true));
  core.connect(1, 0, kStart);
  core.arrive(Arrival{1, 1, 1, 0b01}, kStart);
  const auto sent = of(take(core), Kind::kDeliver);
  REQUIRE(core.nak(1, sent[0].delivery, std::nullopt, kStart));
  const auto dead = of(take(core), Kind::kDeadLetter);
  REQUIRE(dead.size() == 1);
  core.begin_drain(kStart, milliseconds(0));
  CHECK(of(take(core), Kind::kNak).empty());
  core.abandon_all(kStart);
  auto effects = take(core);
  CHECK(of(effects, Kind::kNak).size() == 1);
  CHECK(core.held() == 0);
  CHECK_FALSE(core.dead_letter_stored(dead[0].publish, kStart));
}
