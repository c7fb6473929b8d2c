// Deliveries lost on the way (docs/dispatch-rules.md R32-R35, DeliveryGap): a jump in the consumer
// sequence holds back, for ordered handlers and the AckPolicy all floor, only what lies above the
// highest sequence first delivered before it, and only until the loss is shown to be back.

#include <catch2/catch.hpp>

#include <algorithm>

#include "core_test_support.hpp"
#include "dispatch_core.hpp"

using namespace jetfan;
using Kind = Effect::Kind;
using std::chrono::milliseconds;

namespace {

const TimePoint kStart{};
// With the test keepalive of 500 ms: proof may end a hold 2 s after the jump; it ends at 4.5 s anyway.
const Duration kProofAfter = milliseconds(2000);
const Duration kLetGoAfter = milliseconds(4500);

std::int64_t wall(TimePoint at) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(at - kStart).count() + 1;
}

// A delivery the server numbered `cseq`; handler 0 is ordered by `key` (none: unordered), handler 1
// (when a recipient) is not. Stored at `stored` and arriving at `at` (wall clocks agree in tests).
struct Delivery {
  std::uint64_t seq;
  std::uint64_t cseq;
  std::string key = "a";
  std::uint64_t deliveries = 1;
  HandlerMask recipients = 0b01;
};
void arrive(DispatchCore& core, const Delivery& d, TimePoint at, std::optional<TimePoint> stored = std::nullopt) {
  Arrival arrival{d.seq * 100 + d.deliveries, d.seq, d.deliveries, d.recipients, false, {}};
  if (!d.key.empty()) arrival.order.push_back(OrderKey{0, d.key});
  arrival.consumer_seq = d.cseq;
  arrival.published_ns = static_cast<std::uint64_t>(wall(stored.value_or(kStart)));
  arrival.wall_ns = wall(at);
  core.arrive(arrival, at);
}

// The stream sequences sent to `connection` since the last take, and the deliveries by sequence.
struct Sent {
  std::vector<std::uint64_t> seqs;
  std::map<std::uint64_t, DeliveryId> delivery;
};
Sent sent_to(const std::vector<Effect>& effects, ConnectionId connection) {
  Sent out;
  for (const auto& e : testing::effects_of(effects, Kind::kDeliver)) {
    if (e.connection != connection) continue;
    out.seqs.push_back(e.message / 100);
    out.delivery[e.message / 100] = e.delivery;
  }
  std::sort(out.seqs.begin(), out.seqs.end());
  return out;
}
Sent sent_to(DispatchCore& core, ConnectionId connection) { return sent_to(testing::take_effects(core), connection); }

// Handler 0 (ordered) on connection 1, handler 1 on connection 2; seq 1 to 3 delivered and
// settled, numbered 1 to 3: the highest first delivered before any jump is 3.
CoreSettings two_handlers() { return testing::core_settings(2, 8); }
void settle_three(DispatchCore& core) {
  core.connect(1, 0, kStart);
  core.connect(2, 1, kStart);
  for (std::uint64_t s = 1; s <= 3; ++s) arrive(core, {s, s, "s" + std::to_string(s)}, kStart);
  for (const auto& [seq, delivery] : sent_to(core, 1).delivery) core.ack(1, delivery, kStart);
  testing::take_effects(core);
}

}  // namespace

TEST_CASE("gap: deliveries numbered without a jump, or with a jump back, hold nothing", "[unit]") {
  DispatchCore core(two_handlers());
  settle_three(core);
  arrive(core, {4, 4}, kStart);
  arrive(core, {5, 2}, kStart);  // a new leader with an older record: it delivers again in stream order
  CHECK_FALSE(core.gap_held());
  CHECK(core.counters().delivery_gaps == 0);
  CHECK(sent_to(core, 1).seqs == std::vector<std::uint64_t>{4});  // 5 waits for 4 of its key, not for a gap
}

TEST_CASE(
    "gap: after a jump an ordered handler gets nothing above the highest first delivered before it, until every "
    "sequence below the next first delivery came back, while older ones and unordered handlers go on",
    "[unit]") {
  DispatchCore core(two_handlers());
  settle_three(core);
  // Numbers 4 and 5 never arrived (seqs 4 and 5, first deliveries); the next is seq 6, to both handlers.
  arrive(core, {6, 6, "a", 1, 0b11}, kStart);
  CHECK(core.gap_held());
  CHECK(core.gap_floor() == 3);
  CHECK(core.counters().delivery_gaps == 1);
  CHECK(core.counters().deliveries_lost == 2);
  arrive(core, {7, 7, "b"}, kStart);     // another key: above the floor, it waits too
  arrive(core, {2, 8, "c", 2}, kStart);  // a copy of a settled one: nothing to hand out
  auto effects = testing::take_effects(core);
  CHECK(sent_to(effects, 1).seqs.empty());
  CHECK(sent_to(effects, 2).seqs == std::vector<std::uint64_t>{6});
  // 4 comes back after AckWait: it may go (it is the oldest of its key), 5 is still missing.
  arrive(core, {4, 9, "a", 2}, kStart + milliseconds(2000));
  CHECK(core.gap_held());
  CHECK(sent_to(core, 1).seqs.empty());
  arrive(core, {5, 10, "b", 2}, kStart + milliseconds(2000));
  CHECK_FALSE(core.gap_held());
  CHECK(core.counters().gap_holds_let_go == 0);
  // Each key's oldest: 4 (a, before 6) and 5 (b, before 7).
  CHECK(sent_to(core, 1).seqs == std::vector<std::uint64_t>{4, 5});
}

TEST_CASE("gap: a jump whose next first delivery is the very next sequence lost only copies, and ends at once",
          "[unit]") {
  DispatchCore core(two_handlers());
  settle_three(core);
  arrive(core, {2, 5, "a", 2}, kStart);  // number 4, a copy of something, was lost
  CHECK(core.gap_held());                // not known yet what 4 was
  arrive(core, {4, 6, "a"}, kStart);
  CHECK_FALSE(core.gap_held());
  CHECK(sent_to(core, 1).seqs == std::vector<std::uint64_t>{4});
}

TEST_CASE("gap: proof by a message stored after the proof time, arriving after it, and not by one stored before",
          "[unit]") {
  DispatchCore core(two_handlers());
  settle_three(core);
  arrive(core, {5, 5}, kStart);  // number 4 lost: seq 4 is missing
  const TimePoint proof = kStart + kProofAfter;
  // Stored after it but arriving early (clocks apart): not proof yet.
  arrive(core, {6, 6, "b"}, proof - milliseconds(1), proof + milliseconds(100));
  CHECK(core.gap_held());
  // Stored before the proof time, arriving after it (a stall): not proof that 4 was sent again first.
  arrive(core, {7, 7, "b"}, proof + milliseconds(300), proof - milliseconds(1));
  CHECK(core.gap_held());
  CHECK(sent_to(core, 1).seqs.empty());
  arrive(core, {8, 8, "c"}, proof + milliseconds(300), proof);
  CHECK_FALSE(core.gap_held());
  CHECK(core.counters().gap_holds_let_go == 0);
  CHECK(sent_to(core, 1).seqs == std::vector<std::uint64_t>{5, 6, 8});
}

TEST_CASE("gap: proof by the answer to a pull request sent after the proof time, and only such a one", "[unit]") {
  DispatchCore core(two_handlers());
  settle_three(core);
  arrive(core, {5, 5}, kStart);
  const TimePoint proof = kStart + kProofAfter;
  core.heard(proof, proof - milliseconds(1));                      // not yet the time
  core.heard(proof - milliseconds(1), proof + milliseconds(500));  // sent before it
  CHECK(core.gap_held());
  core.heard(proof, proof + milliseconds(500));
  CHECK_FALSE(core.gap_held());
  CHECK(sent_to(core, 1).seqs == std::vector<std::uint64_t>{5});
}

TEST_CASE("gap: without proof the hold ends at the let-go time, counted, and a second jump extends it", "[unit]") {
  DispatchCore core(two_handlers());
  settle_three(core);
  arrive(core, {5, 5}, kStart);
  arrive(core, {7, 8, "b"}, kStart + milliseconds(1000));  // 6 and a number lost again
  core.tick(kStart + kLetGoAfter);
  CHECK(core.gap_held());
  REQUIRE(core.next_wakeup());
  CHECK(*core.next_wakeup() <= kStart + milliseconds(1000) + kLetGoAfter);
  core.tick(kStart + milliseconds(1000) + kLetGoAfter - milliseconds(1));
  CHECK(core.gap_held());
  core.tick(kStart + milliseconds(1000) + kLetGoAfter);
  CHECK_FALSE(core.gap_held());
  CHECK(core.counters().gap_holds_let_go == 1);
  CHECK(sent_to(core, 1).seqs == std::vector<std::uint64_t>{5, 7});
}

TEST_CASE("gap, AckPolicy all: nothing at or above the first sequence that may be lost is acked until it is back",
          "[unit]") {
  DispatchCore core(testing::core_settings(1, 8, AckPolicy::kAll));
  core.connect(1, 0, kStart);
  auto confirm_all = [&](TimePoint at) {
    for (const auto& [seq, delivery] : sent_to(core, 1).delivery) core.ack(1, delivery, at);
    return testing::effects_of(testing::take_effects(core), Kind::kAck);
  };
  arrive(core, {1, 1, ""}, kStart);
  arrive(core, {2, 2, ""}, kStart);
  CHECK(confirm_all(kStart).size() == 2);
  arrive(core, {4, 4, ""}, kStart);  // number 3, seq 3, lost
  arrive(core, {5, 5, ""}, kStart);
  const auto held = confirm_all(kStart);
  CHECK(held.empty());  // +ACK of 5 would settle 3 at the server
  // Settled and waiting, they take no room from pulling, so that 3 can come back.
  CHECK(core.held() == 2);
  CHECK(core.held_for_room() == 0);
  // A copy of a settled one above the floor waits too.
  arrive(core, {4, 6, "", 2}, kStart);
  CHECK(testing::effects_of(testing::take_effects(core), Kind::kAck).empty());
  arrive(core, {3, 7, "", 2}, kStart + milliseconds(2000));
  CHECK_FALSE(core.gap_held());
  const auto effects = testing::take_effects(core);
  CHECK(testing::effects_of(effects, Kind::kAck).empty());  // 3 itself is not settled yet
  core.ack(1, sent_to(effects, 1).delivery.at(3), kStart + milliseconds(2000));
  const auto acks = testing::effects_of(testing::take_effects(core), Kind::kAck);
  REQUIRE(acks.size() == 1);
  CHECK(acks[0].message == 501);  // one +ACK of the highest
}
