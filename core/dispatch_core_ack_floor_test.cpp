// The ack floor of AckPolicy all while the server may hold messages the core has not seen after a
// restart (expect_outstanding): no +ACK or +TERM goes, and the settled messages waiting for it
// neither keep their bodies nor take room from pulling. After deliveries lost on the way, see
// dispatch_core_gap_test.cpp; AckFloor's own rules (what goes out when the floor passes a message),
// ack_floor_test.cpp.

#include <catch2/catch.hpp>

#include "core_test_support.hpp"
#include "dispatch_core.hpp"

using namespace jetfan;
using Kind = Effect::Kind;
using std::chrono::milliseconds;

namespace {

const TimePoint kStart{};

DispatchCore core_of(AckPolicy policy) { return DispatchCore(testing::core_settings(1, 8, policy)); }

Arrival arrival(std::uint64_t seq, std::uint64_t deliveries = 1) {
  return Arrival{seq * 100 + deliveries, seq, deliveries, 0b1, false, {}};
}

// What an earlier reader left: `pending` of (floor, delivered], waited for until 60 s at the latest.
Outstanding left_unacked(std::uint64_t floor, std::uint64_t delivered, std::uint64_t pending) {
  Outstanding outstanding;
  outstanding.floor = floor;
  outstanding.delivered = delivered;
  outstanding.pending = pending;
  outstanding.until = kStart + milliseconds(60000);
  return outstanding;
}

// Delivers seqs to connection 1 and ACKs each; the effects that follow the ACKs.
std::vector<Effect> confirm(DispatchCore& core, std::initializer_list<std::uint64_t> seqs, TimePoint now) {
  for (const std::uint64_t seq : seqs) core.arrive(arrival(seq), now);
  const auto sent = testing::effects_of(testing::take_effects(core), Kind::kDeliver);
  for (const Effect& e : sent) core.ack(1, e.delivery, now);
  return testing::take_effects(core);
}

}  // namespace

TEST_CASE(
    "AckPolicy all after a restart: nothing is acked until as many of what was left unacked came back as were pending",
    "[unit]") {
  DispatchCore core = core_of(AckPolicy::kAll);
  core.connect(1, 0, kStart);
  core.expect_outstanding(left_unacked(10, 14, 2),
                          kStart);  // two of 11..14; the other two were acked by the earlier reader
  CHECK(core.ack_floor_held());
  CHECK(testing::effects_of(confirm(core, {15, 16}, kStart), Kind::kAck).empty());
  CHECK(testing::effects_of(confirm(core, {12}, kStart), Kind::kAck).empty());
  CHECK(core.ack_floor_held());
  // The second comes back: the hold ends, and the floor rises to the highest settled.
  const auto acks = testing::effects_of(confirm(core, {14}, kStart), Kind::kAck);
  CHECK_FALSE(core.ack_floor_held());
  REQUIRE(acks.size() == 1);
  CHECK(acks[0].message == 1601);
}

TEST_CASE("AckPolicy all after a restart: deliveries lost during the wait do not end it when they are back", "[unit]") {
  DispatchCore core = core_of(AckPolicy::kAll);
  core.connect(1, 0, kStart);
  core.expect_outstanding(left_unacked(10, 11, 1), kStart);
  auto numbered = [](std::uint64_t seq, std::uint64_t cseq, std::uint64_t deliveries = 1) {
    Arrival a = arrival(seq, deliveries);
    a.consumer_seq = cseq;
    return a;
  };
  core.arrive(numbered(12, 1), kStart);
  core.arrive(numbered(14, 3), kStart);  // number 2, seq 13, lost on the way
  CHECK(core.gap_held());
  core.arrive(numbered(13, 4, 2), kStart);
  CHECK_FALSE(core.gap_held());
  for (const Effect& e : testing::effects_of(testing::take_effects(core), Kind::kDeliver))
    core.ack(1, e.delivery, kStart);
  CHECK(testing::effects_of(testing::take_effects(core), Kind::kAck).empty());
  CHECK(core.ack_floor_held());  // the restart's own wait is not over
  core.tick(kStart + milliseconds(60000));
  CHECK_FALSE(core.ack_floor_held());
  CHECK(testing::effects_of(testing::take_effects(core), Kind::kAck).size() == 1);
}

TEST_CASE("the ack floor is held under AckPolicy all only", "[unit]") {
  DispatchCore core = core_of(AckPolicy::kExplicit);
  core.connect(1, 0, kStart);
  core.expect_outstanding(left_unacked(10, 11, 1), kStart);
  CHECK_FALSE(core.ack_floor_held());
  CHECK(testing::effects_of(confirm(core, {12}, kStart), Kind::kAck).size() == 1);
}

TEST_CASE("AckPolicy all after a restart: an answer to a pull sent once all was due again ends the hold", "[unit]") {
  DispatchCore core = core_of(AckPolicy::kAll);
  core.connect(1, 0, kStart);
  core.expect_outstanding(left_unacked(10, 14, 2), kStart);
  CHECK(testing::effects_of(confirm(core, {15}, kStart), Kind::kAck).empty());
  // nak_delay_max (1 s) and AckWait and a third (2 s): from 3 s on.
  const TimePoint proof = kStart + milliseconds(3000);
  core.heard(proof - milliseconds(1), proof);
  CHECK(core.ack_floor_held());
  core.heard(proof, proof);
  CHECK_FALSE(core.ack_floor_held());
  const auto acks = testing::effects_of(testing::take_effects(core), Kind::kAck);
  REQUIRE(acks.size() == 1);
  CHECK(acks[0].message == 1501);
}
