#include <catch2/catch.hpp>

#include <algorithm>

#include "core_test_support.hpp"
#include "dispatch_core.hpp"

using namespace jetfan;
using Kind = Effect::Kind;
using std::chrono::milliseconds;

namespace {

const TimePoint kStart{};
const TimePoint kUntil = kStart + milliseconds(10000);

CoreSettings settings(std::size_t handlers) { return testing::core_settings(handlers, 8); }

// Handler 0 is ordered by the key given, handler 1 (when a recipient) is not.
Arrival ordered(std::uint64_t seq, const std::string& key, HandlerMask recipients = 0b01,
                std::uint64_t deliveries = 1) {
  return Arrival{seq * 100 + deliveries, seq, deliveries, recipients, false, {OrderKey{0, key}}};
}

Outstanding::Entry away(std::uint64_t seq, const std::string& key) { return {seq, {OrderKey{0, key}}}; }

// The stream sequences sent to `connection` since the last take, and the deliveries by sequence.
struct Sent {
  std::vector<std::uint64_t> seqs;
  std::map<std::uint64_t, DeliveryId> delivery;
};
Sent sent_to(DispatchCore& core, ConnectionId connection) {
  Sent out;
  for (const auto& e : testing::effects_of(testing::take_effects(core), Kind::kDeliver)) {
    if (e.connection != connection) continue;
    out.seqs.push_back(e.message / 100);
    out.delivery[e.message / 100] = e.delivery;
  }
  std::sort(out.seqs.begin(), out.seqs.end());
  return out;
}

}  // namespace

TEST_CASE("restart: a later message of a key left outstanding waits until it came back and was settled", "[unit]") {
  DispatchCore core(settings(2));
  core.connect(1, 0, kStart);
  core.connect(2, 1, kStart);
  core.expect_outstanding(Outstanding{{away(5, "a")}, false, 4, 5, 1, kUntil}, kStart);
  CHECK(core.awaiting_outstanding());
  CHECK(core.counters().order_restart_waits == 1);
  core.arrive(ordered(6, "a", 0b11), kStart);
  core.arrive(ordered(7, "b", 0b11), kStart);
  const auto first = testing::take_effects(core);
  std::vector<std::uint64_t> to_ordered, to_other;
  for (const auto& e : testing::effects_of(first, Kind::kDeliver))
    (e.connection == 1 ? to_ordered : to_other).push_back(e.message / 100);
  CHECK(to_ordered == std::vector<std::uint64_t>{7});
  CHECK(to_other == std::vector<std::uint64_t>{6, 7});
  CHECK(core.order_waits()[0].waits_for == 5);

  core.arrive(ordered(5, "a", 0b01, 2), kStart);
  CHECK_FALSE(core.awaiting_outstanding());
  Sent back = sent_to(core, 1);
  REQUIRE(back.seqs == std::vector<std::uint64_t>{5});
  REQUIRE(core.ack(1, back.delivery[5], kStart));
  CHECK(sent_to(core, 1).seqs == std::vector<std::uint64_t>{6});
  CHECK(core.counters().order_gave_up == 0);
}

TEST_CASE("restart: once as many came back as were pending, keys of those acked above the floor go on", "[unit]") {
  DispatchCore core(settings(1));
  core.connect(1, 0, kStart);
  // 5 and 6 may be outstanding; the server says one is pending (the other was acked above the floor).
  core.expect_outstanding(Outstanding{{away(5, "a"), away(6, "b")}, false, 4, 6, 1, kUntil}, kStart);
  core.arrive(ordered(7, "a"), kStart);
  core.arrive(ordered(8, "b"), kStart);
  CHECK(sent_to(core, 1).seqs.empty());
  core.arrive(ordered(5, "a", 0b01, 2), kStart);
  CHECK_FALSE(core.awaiting_outstanding());
  Sent now = sent_to(core, 1);
  REQUIRE(now.seqs == std::vector<std::uint64_t>{5, 8});
  REQUIRE(core.ack(1, now.delivery[5], kStart));
  CHECK(sent_to(core, 1).seqs == std::vector<std::uint64_t>{7});
}

TEST_CASE("restart: what never comes back lets its key go at the time given, counted", "[unit]") {
  DispatchCore core(settings(1));
  core.connect(1, 0, kStart);
  core.expect_outstanding(Outstanding{{away(5, "a")}, false, 4, 5, 1, kUntil}, kStart);
  core.arrive(ordered(6, "a"), kStart);
  CHECK(sent_to(core, 1).seqs.empty());
  REQUIRE(core.next_wakeup());
  CHECK(*core.next_wakeup() <= kUntil);
  core.tick(kUntil - milliseconds(1));
  CHECK(sent_to(core, 1).seqs.empty());
  core.tick(kUntil);
  CHECK(sent_to(core, 1).seqs == std::vector<std::uint64_t>{6});
  CHECK(core.counters().order_gave_up == 1);
  CHECK_FALSE(core.awaiting_outstanding());
}

TEST_CASE("restart: with too many to read, every ordered delivery waits until all pending came back", "[unit]") {
  DispatchCore core(settings(2));
  core.connect(1, 0, kStart);
  core.connect(2, 1, kStart);
  core.expect_outstanding(Outstanding{{}, true, 2, 4, 2, kUntil}, kStart);
  CHECK(core.awaiting_outstanding());
  core.arrive(ordered(10, "a", 0b11), kStart);
  core.arrive(ordered(11, "b", 0b11), kStart);
  const auto first = testing::take_effects(core);
  std::vector<std::uint64_t> to_ordered, to_other;
  for (const auto& e : testing::effects_of(first, Kind::kDeliver))
    (e.connection == 1 ? to_ordered : to_other).push_back(e.message / 100);
  CHECK(to_ordered.empty());
  CHECK(to_other == std::vector<std::uint64_t>{10, 11});
  core.arrive(ordered(3, "a", 0b01, 2), kStart);
  CHECK(sent_to(core, 1).seqs.empty());
  core.arrive(ordered(4, "c", 0b01, 2), kStart);
  CHECK_FALSE(core.awaiting_outstanding());
  Sent now = sent_to(core, 1);
  REQUIRE(now.seqs == std::vector<std::uint64_t>{3, 4, 11});
  REQUIRE(core.ack(1, now.delivery[3], kStart));
  CHECK(sent_to(core, 1).seqs == std::vector<std::uint64_t>{10});
}

TEST_CASE("restart: nothing pending means nothing waits", "[unit]") {
  DispatchCore core(settings(1));
  core.connect(1, 0, kStart);
  core.expect_outstanding(Outstanding{{away(5, "a")}, false, 4, 5, 0, kUntil}, kStart);
  CHECK_FALSE(core.awaiting_outstanding());
  core.arrive(ordered(6, "a"), kStart);
  CHECK(sent_to(core, 1).seqs == std::vector<std::uint64_t>{6});
}

TEST_CASE(
    "restart: deliveries lost during the wait for what an earlier reader left hold the keys above them, and their "
    "return does not end the wait",
    "[unit]") {
  DispatchCore core(settings(2));
  core.connect(1, 0, kStart);
  core.expect_outstanding(Outstanding{{away(5, "a")}, false, 4, 5, 1, kUntil}, kStart);
  auto numbered = [](Arrival a, std::uint64_t cseq) {
    a.consumer_seq = cseq;
    return a;
  };
  core.arrive(numbered(ordered(6, "a"), 1), kStart);  // waits for 5
  core.arrive(numbered(ordered(7, "b"), 2), kStart);
  CHECK(sent_to(core, 1).seqs == std::vector<std::uint64_t>{7});
  core.arrive(numbered(ordered(9, "c"), 4), kStart);  // number 3, seq 8, lost on the way
  CHECK(core.gap_held());
  CHECK(sent_to(core, 1).seqs.empty());  // 9 is above 7, the highest first delivered before the jump
  core.arrive(numbered(ordered(8, "b", 0b01, 2), 5), kStart + milliseconds(2000));
  CHECK_FALSE(core.gap_held());
  CHECK(core.awaiting_outstanding());                             // 5 is still away
  CHECK(sent_to(core, 1).seqs == std::vector<std::uint64_t>{9});  // 8 waits for 7 of its key
  core.arrive(numbered(ordered(5, "a", 0b01, 2), 6), kStart + milliseconds(2000));
  CHECK_FALSE(core.awaiting_outstanding());
  CHECK(sent_to(core, 1).seqs == std::vector<std::uint64_t>{5});
}

namespace {
// nak_delay_max (1 s) and AckWait and a third (4 keepalives of 500 ms) after kStart.
const TimePoint kProof = kStart + milliseconds(3000);
const std::int64_t kStartWall = 1'000'000'000'000;
std::uint64_t wall_at(TimePoint t) {
  return static_cast<std::uint64_t>(kStartWall +
                                    std::chrono::duration_cast<std::chrono::nanoseconds>(t - kStart).count());
}
Arrival stored_at(std::uint64_t seq, const std::string& key, TimePoint stored, TimePoint now) {
  Arrival arrival = ordered(seq, key);
  arrival.published_ns = wall_at(stored);
  arrival.wall_ns = static_cast<std::int64_t>(wall_at(now));
  return arrival;
}
Outstanding left(std::vector<Outstanding::Entry> messages, bool unread) {
  Outstanding o{std::move(messages), unread, 4, 6, 2, kUntil};
  o.wall_ns = kStartWall;
  return o;
}
}  // namespace

TEST_CASE("restart: a message stored once all was due again ends the wait, one stored before does not", "[unit]") {
  const bool unread = GENERATE(false, true);
  DispatchCore core(settings(1));
  core.connect(1, 0, kStart);
  core.expect_outstanding(left({away(5, "a"), away(6, "b")}, unread), kStart);
  core.arrive(stored_at(7, "a", kStart, kStart), kStart);
  // Stored before the proof time, arriving after it: the server may still owe 5 (a stall held it).
  core.arrive(stored_at(8, "c", kProof - milliseconds(1), kProof), kProof);
  CHECK(core.awaiting_outstanding());
  const auto early = sent_to(core, 1).seqs;
  CHECK(std::find(early.begin(), early.end(), 7) == early.end());
  // Stored after it: what was due again came first, so 5 and 6 were acked above the floor.
  core.arrive(stored_at(9, "d", kProof, kProof), kProof);
  CHECK_FALSE(core.awaiting_outstanding());
  const auto now = sent_to(core, 1).seqs;
  CHECK(std::find(now.begin(), now.end(), 7) != now.end());
  CHECK(core.counters().order_gave_up == 0);  // acked, not given up on
}

TEST_CASE("restart: an answer to a pull sent once all was due again ends the wait, one sent before does not",
          "[unit]") {
  DispatchCore core(settings(1));
  core.connect(1, 0, kStart);
  core.expect_outstanding(left({away(5, "a")}, false), kStart);
  core.arrive(stored_at(7, "a", kStart, kStart), kStart);
  core.heard(kProof - milliseconds(1), kProof + milliseconds(500));
  CHECK(core.awaiting_outstanding());
  CHECK(sent_to(core, 1).seqs.empty());
  core.heard(kProof, kProof + milliseconds(500));
  CHECK_FALSE(core.awaiting_outstanding());
  CHECK(sent_to(core, 1).seqs == std::vector<std::uint64_t>{7});
}

TEST_CASE("restart: a message the ledger says a handler confirmed goes only to the others, or is acked at once",
          "[unit]") {
  DispatchCore core(settings(2));
  core.connect(1, 0, kStart);
  core.connect(2, 1, kStart);
  core.remember_confirmed(5, 0b01);  // handler 0 confirmed 5 in the run before
  core.remember_confirmed(6, 0b11);  // both confirmed 6: it was held for none, and not yet acked
  core.remember_confirmed(7, 0);     // nothing
  CHECK(core.confirmed_before(5) == 0b01);
  core.arrive(Arrival{500, 5, 2, 0b11}, kStart);
  core.arrive(Arrival{600, 6, 2, 0b11}, kStart);
  const auto effects = testing::take_effects(core);
  const auto delivered = testing::effects_of(effects, Kind::kDeliver);
  REQUIRE(delivered.size() == 1);
  CHECK(delivered[0].connection == 2);
  CHECK(delivered[0].message == 500);
  const auto acked = testing::effects_of(effects, Kind::kAck);
  REQUIRE(acked.size() == 1);
  CHECK(acked[0].message == 600);
  CHECK(core.counters().skipped_confirmed == 3);

  // Once the other handler confirms, 5 is acked; a held message is not changed by the ledger.
  core.remember_confirmed(5, 0b10);
  CHECK(core.confirmed_before(5) == 0b01);
  core.ack(2, delivered[0].delivery, kStart);
  CHECK(testing::effects_of(testing::take_effects(core), Kind::kAck).size() == 1);
}

TEST_CASE("restart: a message the ledger says an ordered handler confirmed counts as confirmed for its key", "[unit]") {
  DispatchCore core(settings(2));
  core.connect(1, 0, kStart);
  core.connect(2, 1, kStart);
  // 5 (key a) was left outstanding; the ledger says the ordered handler 0 had confirmed it.
  core.expect_outstanding(Outstanding{{away(5, "a")}, false, 4, 5, 1, kUntil}, kStart);
  core.remember_confirmed(5, 0b01);
  core.arrive(ordered(6, "a", 0b01), kStart);
  CHECK(sent_to(core, 1).seqs.empty());  // 6 waits for 5
  // 5 comes again: it goes to handler 1 alone, and 6 goes to handler 0 at once.
  core.arrive(ordered(5, "a", 0b11, 2), kStart);
  CHECK_FALSE(core.awaiting_outstanding());
  const auto effects = testing::take_effects(core);
  std::vector<std::uint64_t> to_ordered, to_other;
  for (const auto& e : testing::effects_of(effects, Kind::kDeliver))
    (e.connection == 1 ? to_ordered : to_other).push_back(e.message / 100);
  CHECK(to_ordered == std::vector<std::uint64_t>{6});
  CHECK(to_other == std::vector<std::uint64_t>{5});
  CHECK(core.counters().skipped_confirmed == 1);
}
