// RestartWait, FloorHold and SentAgainProof on their own: when the waits after a restart end
// (R27-R29). dispatch_core_restart_test.cpp shows what the core holds back while they last.

#include "restart_wait.hpp"

#include <catch2/catch.hpp>

#include "delivery_gap.hpp"

using namespace jetfan;
using std::chrono::milliseconds;

namespace {

const TimePoint kStart{};
const Duration kKeepalive = milliseconds(1000);
const Duration kNakDelayMax = milliseconds(5000);
constexpr std::int64_t kWall = 1'000'000'000'000;

// An earlier reader left (10, 20] delivered with 3 of them unacked.
Outstanding left_three() {
  Outstanding outstanding;
  outstanding.floor = 10;
  outstanding.delivered = 20;
  outstanding.pending = 3;
  outstanding.until = kStart + milliseconds(60'000);
  outstanding.wall_ns = kWall;
  return outstanding;
}

SentAgainProof proof_of(const Outstanding& outstanding) {
  return SentAgainProof::after(outstanding, kNakDelayMax, kKeepalive, kStart);
}

}  // namespace

TEST_CASE(
    "restart wait: it covers what lies above the floor up to the last delivered, and ends once as many came back as "
    "were pending",
    "[unit]") {
  const Outstanding outstanding = left_three();
  RestartWait wait(outstanding, proof_of(outstanding));
  CHECK(!wait.waits());
  CHECK(!wait.covers(10));
  CHECK(wait.covers(11));
  CHECK(wait.covers(20));
  CHECK(!wait.covers(21));
  wait.away(12);
  wait.away(15);
  CHECK(wait.waits());
  CHECK(!wait.arrived(21));  // a new message
  CHECK(!wait.arrived(12));
  CHECK(wait.still_away() == std::set<std::uint64_t>{15});
  CHECK(!wait.arrived(13));  // one no ordered handler owes: it counts toward pending too
  CHECK(wait.arrived(14));   // the third back: the rest were acked above the floor
  CHECK(wait.still_away() == std::set<std::uint64_t>{15});
  CHECK(wait.until() == outstanding.until);
  CHECK(!wait.holds_all());
}

TEST_CASE("restart wait: unread, every ordered delivery waits", "[unit]") {
  Outstanding outstanding = left_three();
  outstanding.unread = true;
  const RestartWait wait(outstanding, proof_of(outstanding));
  CHECK(wait.waits());
  CHECK(wait.holds_all());
}

TEST_CASE("sent-again proof: after nak_delay_max and AckWait and a third, by a later store or answer", "[unit]") {
  const Outstanding outstanding = left_three();
  const SentAgainProof proof = proof_of(outstanding);
  const Duration wait = kNakDelayMax + gap_hold(kKeepalive);
  CHECK(proof.at == kStart + wait);
  const std::int64_t at_wall = kWall + std::chrono::duration_cast<std::chrono::nanoseconds>(wait).count();
  CHECK(proof.wall_ns == at_wall);
  CHECK(!proof.by_store(static_cast<std::uint64_t>(at_wall), proof.at - milliseconds(1)));
  CHECK(!proof.by_store(static_cast<std::uint64_t>(at_wall - 1), proof.at));
  CHECK(!proof.by_store(0, proof.at));
  CHECK(proof.by_store(static_cast<std::uint64_t>(at_wall), proof.at));
  CHECK(!proof.by_answer(proof.at - milliseconds(1), proof.at));
  CHECK(proof.by_answer(proof.at, proof.at));

  Outstanding no_wall = outstanding;
  no_wall.wall_ns = 0;
  const SentAgainProof by_answer_only = proof_of(no_wall);
  CHECK(!by_answer_only.by_store(static_cast<std::uint64_t>(at_wall) * 2, by_answer_only.at));
  CHECK(by_answer_only.by_answer(by_answer_only.at, by_answer_only.at));
}

TEST_CASE("floor hold: ends once pending came back, and a later hold keeps the later until", "[unit]") {
  const Outstanding outstanding = left_three();
  FloorHold hold(outstanding, proof_of(outstanding), nullptr);
  CHECK(hold.until() == outstanding.until);
  CHECK(!hold.arrived(10));
  CHECK(!hold.arrived(21));
  CHECK(!hold.arrived(11));
  CHECK(!hold.arrived(11));  // a copy again: counted once
  CHECK(!hold.arrived(12));
  CHECK(hold.arrived(20));

  Outstanding sooner = left_three();
  sooner.until = kStart + milliseconds(1000);
  const FloorHold replaced(sooner, proof_of(sooner), &hold);
  CHECK(replaced.until() == outstanding.until);
}
