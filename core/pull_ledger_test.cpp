#include "pull_ledger.hpp"

#include <catch2/catch.hpp>

using namespace jetfan;
using std::chrono::milliseconds;

namespace {

const TimePoint kStart = TimePoint() + std::chrono::hours(1);

PullSettings settings(std::size_t batch = 10, std::size_t max_held = 100) {
  return PullSettings{batch, max_held, 0, milliseconds(5000), milliseconds(1000)};
}

std::vector<PullRequest> top_up(PullLedger& ledger, std::size_t held, TimePoint now = kStart) {
  std::vector<PullRequest> out;
  ledger.top_up(held, 0, now, out);
  return out;
}

}  // namespace

TEST_CASE("pull ledger: between one and two batches stay requested", "[unit]") {
  PullLedger ledger(settings());
  const auto first = top_up(ledger, 0);
  REQUIRE(first.size() == 1);
  CHECK(first[0].batch == 10);
  CHECK(first[0].expires == milliseconds(5000));
  CHECK(first[0].idle_heartbeat == milliseconds(1000));
  CHECK(top_up(ledger, 0).empty());  // a whole batch is waiting
  for (int i = 0; i < 3; ++i) ledger.on_message(kStart);
  const auto next = top_up(ledger, 3);
  REQUIRE(next.size() == 1);  // the next one goes before the first is used up
  CHECK(next[0].id == first[0].id + 1);
  CHECK(ledger.requested() == 17);
}

TEST_CASE("pull ledger: held plus requested never exceeds max_held", "[unit]") {
  PullLedger ledger(settings(10, 25));
  CHECK(top_up(ledger, 20).at(0).batch == 5);  // only the room left
  CHECK(ledger.requested() == 5);
  CHECK(top_up(ledger, 20).empty());
  for (int i = 0; i < 5; ++i) ledger.on_message(kStart);
  CHECK(top_up(ledger, 25).empty());  // full: nothing requested
  CHECK(ledger.requested() == 0);
  const auto room = top_up(ledger, 24);
  REQUIRE(room.size() == 1);
  CHECK(room[0].batch == 1);
}

TEST_CASE("pull ledger: with a request waiting, room gathers into a full batch", "[unit]") {
  PullLedger ledger(settings(10, 100));
  top_up(ledger, 0);
  ledger.on_message(kStart);
  CHECK(top_up(ledger, 90).empty());  // room for 1 only: the request waiting is enough
  ledger.on_status(1, "408", "", kStart);
  CHECK(top_up(ledger, 90).at(0).batch == 10);
}

TEST_CASE("pull ledger: a message is charged to the oldest request", "[unit]") {
  PullLedger ledger(settings(2, 100));
  top_up(ledger, 0);          // request 1: 2
  ledger.on_message(kStart);  // 1 has 1 left
  top_up(ledger, 1);          // request 2: 2
  REQUIRE(ledger.outstanding() == 2);
  ledger.on_message(kStart);  // used up 1
  CHECK(ledger.outstanding() == 1);
  CHECK(ledger.requested() == 2);
  // The one left is request 2: a 408 for it clears everything.
  CHECK(ledger.on_status(2, "408", "", kStart) == PullLedger::StatusOutcome::kFinished);
  CHECK(ledger.outstanding() == 0);
  CHECK(ledger.requested() == 0);
}

TEST_CASE("pull ledger: each status reply retires exactly its own request", "[unit]") {
  using Outcome = PullLedger::StatusOutcome;
  struct Case {
    const char* code;
    Outcome outcome;
  };
  for (const Case c : {Case{"404", Outcome::kFinished}, Case{"408", Outcome::kFinished},
                       Case{"423", Outcome::kFinished}, Case{"409", Outcome::kUnexpected}}) {
    INFO(c.code);
    PullLedger ledger(settings(10, 100));
    top_up(ledger, 0);  // 1
    ledger.on_message(kStart);
    top_up(ledger, 1);  // 2
    REQUIRE(ledger.requested() == 19);
    CHECK(ledger.on_status(2, c.code, "", kStart) == c.outcome);
    CHECK(ledger.requested() == 9);  // request 1's nine remain
    CHECK(ledger.outstanding() == 1);
    CHECK(ledger.on_status(2, c.code, "", kStart) == c.outcome);  // again: nothing more to retire
    CHECK(ledger.requested() == 9);
  }
}

TEST_CASE("pull ledger: a deleted consumer is told apart from the other 409s", "[unit]") {
  // The status lines nats-server sends to a waiting pull request (2.9.x, 2.10.x and later alike);
  // cnats splits "NATS/1.0 409 Consumer Deleted" into the code and the description.
  using Outcome = PullLedger::StatusOutcome;
  struct Case {
    const char* description;
    Outcome outcome;
  };
  for (const Case c :
       {Case{"Consumer Deleted", Outcome::kConsumerDeleted}, Case{"Leadership Change", Outcome::kUnexpected},
        Case{"Consumer is push based", Outcome::kUnexpected},
        Case{"Exceeded MaxRequestBatch of 256", Outcome::kUnexpected},
        Case{"Exceeded MaxWaiting", Outcome::kUnexpected}, Case{"Message Size Exceeds MaxBytes", Outcome::kFinished}}) {
    INFO(c.description);
    PullLedger ledger(settings(10, 100));
    top_up(ledger, 0);
    CHECK(ledger.on_status(1, "409", c.description, kStart) == c.outcome);
    CHECK(ledger.outstanding() == 0);  // whatever it says, the request is over
  }
  // The words alone are not enough: only a 409 says the consumer went.
  PullLedger ledger(settings(10, 100));
  top_up(ledger, 0);
  CHECK(ledger.on_status(1, "404", "Consumer Deleted", kStart) == Outcome::kFinished);
}

TEST_CASE("pull ledger: 409 Batch Completed is no warning, and what it overtook stays charged", "[unit]") {
  // nats-server 2.10 and later say it when a request with max_bytes has had its whole batch.
  PullLedger ledger(settings(2, 4));
  top_up(ledger, 0);  // request 1: 2
  ledger.on_message(kStart);
  ledger.on_message(kStart);  // used up: retired
  REQUIRE(ledger.outstanding() == 0);
  top_up(ledger, 2);  // request 2: 2, all the room there is
  CHECK(ledger.on_status(1, "409", "Batch Completed", kStart) == PullLedger::StatusOutcome::kFinished);
  CHECK(ledger.requested() == 2);  // says nothing of request 2
  // On a replicated consumer it can come before the messages of the batch it completes: they are
  // still on their way, so their room is not free.
  ledger.on_message(kStart);
  CHECK(ledger.on_status(2, "409", "Batch Completed", kStart) == PullLedger::StatusOutcome::kFinished);
  CHECK(ledger.requested() == 1);
  CHECK(top_up(ledger, 3).empty());  // 3 held + 1 on its way: full
  ledger.on_message(kStart);
  CHECK(ledger.outstanding() == 0);
  CHECK(ledger.requested() == 0);
}

TEST_CASE("pull ledger: a heartbeat keeps a request alive and retires nothing", "[unit]") {
  PullLedger ledger(settings());
  top_up(ledger, 0);
  TimePoint now = kStart;
  for (int i = 0; i < 4; ++i) {  // within its 5s expiry
    now += milliseconds(1000);
    CHECK(ledger.on_status(1, "100", "", now) == PullLedger::StatusOutcome::kAlive);
    CHECK(ledger.check_liveness(now) == PullLedger::Liveness::kFine);
  }
  CHECK(ledger.requested() == 10);
}

TEST_CASE("pull ledger: lost heartbeats drop every request, and the next top-up pulls anew", "[unit]") {
  PullLedger ledger(settings());
  top_up(ledger, 0);
  const auto silent_for = PullLedger::kMissedHeartbeats * milliseconds(1000);
  CHECK(ledger.check_liveness(kStart + silent_for) == PullLedger::Liveness::kFine);
  CHECK(ledger.check_liveness(kStart + silent_for + milliseconds(1)) == PullLedger::Liveness::kSilent);
  CHECK(ledger.requested() == 0);
  const auto again = top_up(ledger, 0, kStart + silent_for + milliseconds(1));
  REQUIRE(again.size() == 1);
  CHECK(again[0].id == 2);
}

TEST_CASE("pull ledger: silence is not counted while nothing is requested", "[unit]") {
  PullLedger ledger(settings(10, 10));
  top_up(ledger, 0);
  for (int i = 0; i < 10; ++i) ledger.on_message(kStart);
  CHECK(ledger.outstanding() == 0);
  CHECK(ledger.check_liveness(kStart + std::chrono::hours(1)) == PullLedger::Liveness::kFine);
}

TEST_CASE("pull ledger: a reconnect drops every request so the next top-up re-pulls at once", "[unit]") {
  PullLedger ledger(settings());
  top_up(ledger, 0);
  ledger.on_message(kStart);
  top_up(ledger, 1);
  ledger.on_reconnect(kStart + milliseconds(10));
  CHECK(ledger.requested() == 0);
  CHECK(ledger.outstanding() == 0);
  CHECK(top_up(ledger, 1, kStart + milliseconds(10)).size() == 1);
  // A message answering a dropped request charges nothing it should not.
  ledger.on_message(kStart);
  CHECK(ledger.requested() == 9);
}

TEST_CASE("pull ledger: a request past its expiry with no 408 gives its credit back after the grace", "[unit]") {
  PullLedger ledger(settings());
  top_up(ledger, 0);
  TimePoint now = kStart;
  // Heartbeats keep coming (from a later request, say) so silence does not drop it first.
  auto at = [&](milliseconds since_start) {
    now = kStart + since_start;
    ledger.on_status(99, "100", "", now);
    return ledger.check_liveness(now);
  };
  at(milliseconds(5000) + PullLedger::kExpiryGrace);
  CHECK(ledger.requested() == 10);
  at(milliseconds(5000) + PullLedger::kExpiryGrace + milliseconds(1));
  CHECK(ledger.requested() == 0);
}

TEST_CASE("pull ledger: a failed send is forgotten", "[unit]") {
  PullLedger ledger(settings());
  const auto sent = top_up(ledger, 0);
  ledger.cancel(sent[0].id);
  CHECK(ledger.requested() == 0);
  CHECK(top_up(ledger, 0).size() == 1);
}

TEST_CASE("pull ledger: stop() sends nothing more", "[unit]") {
  PullLedger ledger(settings());
  ledger.stop();
  CHECK(top_up(ledger, 0).empty());
}

TEST_CASE("pull ledger: the hand-back delay outlasts every request still open", "[unit]") {
  PullLedger ledger(settings(10, 100));
  CHECK(ledger.handback_delay(kStart) == milliseconds(0));  // nothing was ever requested
  top_up(ledger, 0, kStart);                                // expires at +5000
  ledger.on_message(kStart);
  top_up(ledger, 1, kStart + milliseconds(1000));  // expires at +6000
  CHECK(ledger.handback_delay(kStart + milliseconds(2000)) == milliseconds(4000) + PullLedger::kHandbackMargin);
  ledger.on_status(2, "408", "", kStart + milliseconds(2000));  // the later one is over
  CHECK(ledger.handback_delay(kStart + milliseconds(2000)) == milliseconds(3000) + PullLedger::kHandbackMargin);
  // Dropped requests may still wait at the server: they still count.
  ledger.on_reconnect(kStart + milliseconds(2000));
  CHECK(ledger.handback_delay(kStart + milliseconds(2000)) == milliseconds(3000) + PullLedger::kHandbackMargin);
  CHECK(ledger.handback_delay(kStart + milliseconds(5000)) == PullLedger::kHandbackMargin);
  CHECK(ledger.handback_delay(kStart + milliseconds(5000) + PullLedger::kHandbackMargin) == milliseconds(0));
}

TEST_CASE("pull ledger: when the leader may be new, it probes until the server answers, then pulls anew", "[unit]") {
  PullLedger ledger(settings());
  top_up(ledger, 0);
  CHECK_FALSE(ledger.take_probe(kStart));  // nothing to be unsure about yet
  ledger.on_status(1, "409", "", kStart);
  ledger.on_leader_unsure(kStart);
  const auto first = ledger.take_probe(kStart);
  REQUIRE(first);
  CHECK_FALSE(ledger.take_probe(kStart + milliseconds(100)));  // not yet due
  CHECK(ledger.next_probe() == kStart + PullLedger::kProbeInterval);
  // Pulling goes on meanwhile (its requests may be lost).
  CHECK(top_up(ledger, 0, kStart).size() == 1);
  CHECK_FALSE(ledger.on_probe_answer(false, kStart + milliseconds(150)));  // an error: still unsure
  CHECK(ledger.probing());
  const auto second = ledger.take_probe(kStart + PullLedger::kProbeInterval);
  REQUIRE(second);
  CHECK(*second == *first + 1);
  CHECK(ledger.next_probe() == kStart + 3 * PullLedger::kProbeInterval);  // then less often
  CHECK(ledger.on_probe_answer(true, kStart + milliseconds(300)));
  CHECK_FALSE(ledger.probing());
  CHECK(ledger.requested() == 0);  // dropped: the next top-up pulls at once
  CHECK(top_up(ledger, 0, kStart + milliseconds(300)).size() == 1);
  CHECK_FALSE(ledger.on_probe_answer(true, kStart + milliseconds(400)));  // a late answer changes nothing
  CHECK(ledger.requested() == 10);
}

namespace {
PullSettings byte_settings(std::uint64_t budget) {
  PullSettings s = settings(10, 1000);
  s.max_held_bytes = budget;
  return s;
}
std::vector<PullRequest> top_up_bytes(PullLedger& ledger, std::size_t held, std::uint64_t held_bytes) {
  std::vector<PullRequest> out;
  ledger.top_up(held, held_bytes, kStart, out);
  return out;
}
}  // namespace

TEST_CASE("pull ledger: requests carry max_bytes within the byte budget, two at a time", "[unit]") {
  PullLedger ledger(byte_settings(1000));
  const auto first = top_up_bytes(ledger, 0, 0);
  REQUIRE(first.size() == 1);
  CHECK(first[0].max_bytes == 500);  // half the budget, so the next can wait while this one is filled
  ledger.on_message(kStart, 300);    // charged to it
  CHECK(ledger.requested_bytes() == 200);
  const auto second = top_up_bytes(ledger, 1, 300);
  REQUIRE(second.size() == 1);
  CHECK(second[0].max_bytes == 500);
  CHECK(ledger.requested_bytes() == 700);  // with the 300 held: the whole budget
  ledger.on_message(kStart, 100);
  CHECK(top_up_bytes(ledger, 2, 400).empty());  // held + requested still fill the budget
  // The first request ends (408): its unused bytes come back as room.
  ledger.on_status(1, "408", "", kStart);
  CHECK(ledger.requested_bytes() == 500);
  ledger.on_message(kStart, 50);  // now charged to request 2, which then has room for a successor
  const auto next = top_up_bytes(ledger, 3, 450);
  REQUIRE(next.size() == 1);
  CHECK(next[0].max_bytes == 100);  // 1000 less 450 held less 450 still requested
}

TEST_CASE("pull ledger: a message bigger than the room waits for room, and one bigger than the budget comes alone",
          "[unit]") {
  PullLedger ledger(byte_settings(1000));
  top_up_bytes(ledger, 0, 0);
  // The next message does not fit in request 1's 500 bytes.
  CHECK(ledger.on_status(1, "409", "Message Size Exceeds MaxBytes", kStart) == PullLedger::StatusOutcome::kFinished);
  // No request of 500 bytes or less goes out again: it would end the same way.
  CHECK(top_up_bytes(ledger, 3, 600).empty());
  // Nothing held: a request for the whole budget, and when it does not fit in that either, the
  // big one is pulled alone, with no max_bytes.
  const auto whole = top_up_bytes(ledger, 0, 0);
  REQUIRE(whole.size() == 1);
  CHECK(whole[0].max_bytes == 1000);
  CHECK(ledger.on_status(whole[0].id, "409", "Message Size Exceeds MaxBytes", kStart) ==
        PullLedger::StatusOutcome::kFinished);
  const auto alone = top_up_bytes(ledger, 0, 0);
  REQUIRE(alone.size() == 1);
  CHECK(alone[0].batch == 1);
  CHECK(alone[0].max_bytes == 0);
  ledger.on_message(kStart, 5000);
  // Afterwards, requests carry max_bytes again.
  const auto after = top_up_bytes(ledger, 0, 0);
  REQUIRE_FALSE(after.empty());
  CHECK(after[0].max_bytes == 500);
}

TEST_CASE("pull ledger: after a message did not fit, the next request asks for all the room there is", "[unit]") {
  PullLedger ledger(byte_settings(1000));
  const auto first = top_up_bytes(ledger, 0, 0);
  REQUIRE(first.size() == 1);
  ledger.on_message(kStart, 300);
  // The next message is bigger than the 200 bytes left of request 1.
  CHECK(ledger.on_status(first[0].id, "409", "Message Size Exceeds MaxBytes", kStart) ==
        PullLedger::StatusOutcome::kFinished);
  // 700 bytes of room is more than the 500 that did not fit: one request for all of it, although
  // something is held (capped at half the budget it would never get the message).
  const auto roomy = top_up_bytes(ledger, 1, 300);
  REQUIRE(roomy.size() == 1);
  CHECK(roomy[0].max_bytes == 700);
  CHECK_FALSE(ledger.full(1, 300));
  // It did not fit in 700 either: with 700 or less of room jetfan is full until something settles.
  CHECK(ledger.on_status(roomy[0].id, "409", "Message Size Exceeds MaxBytes", kStart) ==
        PullLedger::StatusOutcome::kFinished);
  CHECK(top_up_bytes(ledger, 1, 300).empty());
  CHECK(ledger.full(1, 300));
}

TEST_CASE("pull ledger: full by count, by bytes, or when the next message no longer fits", "[unit]") {
  PullSettings settings;
  settings.max_held = 10;
  settings.batch = 4;
  settings.max_held_bytes = 1000;
  PullLedger ledger(settings);
  CHECK_FALSE(ledger.full(0, 0));
  CHECK_FALSE(ledger.full(9, 999));
  CHECK(ledger.full(10, 0));
  CHECK(ledger.full(3, 1000));
  CHECK_FALSE(ledger.full(0, 1000));  // nothing held: a message bigger than the budget comes alone
  settings.max_held_bytes = 0;
  CHECK_FALSE(PullLedger(settings).full(9, 1'000'000));
}
