#include <catch2/catch.hpp>

#include <algorithm>

#include "core_test_support.hpp"
#include "dispatch_core.hpp"

using namespace jetfan;
using Kind = Effect::Kind;
using std::chrono::milliseconds;

namespace {

const TimePoint kStart{};

CoreSettings settings(std::size_t handlers) { return testing::core_settings(handlers, 8); }

// Handler 0 is ordered by the key given, handler 1 (when a recipient) is not.
Arrival ordered(std::uint64_t seq, const std::string& key, HandlerMask recipients = 0b01,
                std::uint64_t deliveries = 1) {
  return Arrival{seq * 100 + deliveries, seq, deliveries, recipients, false, {OrderKey{0, key}}};
}

std::vector<Effect> take(DispatchCore& core, Kind kind) { return testing::effects_of(core.effects(), kind); }
std::vector<Effect> take_all(DispatchCore& core, Kind kind) {
  return testing::effects_of(testing::take_effects(core), kind);
}
// The stream sequences of the MSGs since the last take.
std::vector<std::uint64_t> delivered(DispatchCore& core) {
  std::vector<std::uint64_t> seqs;
  for (const auto& e : take_all(core, Kind::kDeliver)) seqs.push_back(e.message / 100);
  return seqs;
}

}  // namespace

TEST_CASE("ordered: one key goes one at a time in stream order, other keys at once, unordered handlers at once",
          "[unit]") {
  DispatchCore core(settings(2));
  core.connect(1, 0, kStart);
  core.connect(2, 1, kStart);
  core.arrive(ordered(1, "a", 0b11), kStart);
  core.arrive(ordered(2, "a", 0b11), kStart);
  core.arrive(ordered(3, "b", 0b11), kStart);
  core.arrive(ordered(4, "a", 0b11), kStart);
  std::vector<Effect> sent = take_all(core, Kind::kDeliver);
  std::vector<std::uint64_t> to_ordered, to_other;
  for (const auto& e : sent) (e.connection == 1 ? to_ordered : to_other).push_back(e.message / 100);
  CHECK(to_ordered == std::vector<std::uint64_t>{1, 3});
  CHECK(to_other == std::vector<std::uint64_t>{1, 2, 3, 4});
  const auto loads = core.order_waits();
  CHECK(loads[0].load.blocked_keys == 1);
  CHECK(loads[0].load.waiting == 2);
  CHECK(loads[0].key == "a");
  CHECK(loads[0].waits_for == 1);
  CHECK(loads[1].load.keys == 0);

  const DeliveryId first = sent[0].delivery;
  REQUIRE(sent[0].connection == 1);
  REQUIRE(core.ack(1, first, kStart));
  CHECK(delivered(core) == std::vector<std::uint64_t>{2});
}

TEST_CASE("ordered: a NAK is retried inside jetfan after its delay, before the next of its key, with no -NAK",
          "[unit]") {
  DispatchCore core(settings(1));
  core.connect(1, 0, kStart);
  for (std::uint64_t seq = 1; seq <= 10; ++seq) core.arrive(ordered(seq, "k"), kStart);
  auto sent = take_all(core, Kind::kDeliver);
  REQUIRE(sent.size() == 1);
  REQUIRE(core.nak(1, sent[0].delivery, std::nullopt, kStart));
  CHECK(take(core, Kind::kNak).empty());
  CHECK(take_all(core, Kind::kDeliver).empty());  // nothing of the key while m1 waits for its delay
  CHECK(core.next_wakeup() == kStart + milliseconds(100));
  core.tick(kStart + milliseconds(99));
  CHECK(delivered(core).empty());
  core.tick(kStart + milliseconds(100));
  sent = take_all(core, Kind::kDeliver);
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].message / 100 == 1);
  CHECK(core.counters().order_retries == 1);
  // The next failure waits twice as long.
  REQUIRE(core.nak(1, sent[0].delivery, std::nullopt, kStart + milliseconds(100)));
  core.tick(kStart + milliseconds(299));
  CHECK(delivered(core).empty());
  core.tick(kStart + milliseconds(300));
  sent = take_all(core, Kind::kDeliver);
  REQUIRE(sent.size() == 1);
  TimePoint now = kStart + milliseconds(300);
  for (std::uint64_t seq = 1; seq <= 10; ++seq) {
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].message / 100 == seq);
    REQUIRE(core.ack(1, sent[0].delivery, now));
    CHECK(take(core, Kind::kAck).size() == 1);
    sent = take_all(core, Kind::kDeliver);
  }
  CHECK(core.held() == 0);
}

TEST_CASE("ordered: each retry inside jetfan is one more delivery to the handler, the server's count stays", "[unit]") {
  DispatchCore core(settings(2));
  core.connect(1, 0, kStart);
  core.connect(2, 1, kStart);
  core.arrive(ordered(1, "k", 0b11), kStart);
  auto sent = take_all(core, Kind::kDeliver);
  REQUIRE(sent.size() == 2);
  for (const auto& e : sent) CHECK(e.deliveries == 1);
  const Effect to_other = sent[0].connection == 2 ? sent[0] : sent[1];
  const Effect to_ordered = sent[0].connection == 1 ? sent[0] : sent[1];
  REQUIRE(core.ack(2, to_other.delivery, kStart));
  REQUIRE(core.nak(1, to_ordered.delivery, std::nullopt, kStart));
  TimePoint now = kStart + milliseconds(100);
  for (std::uint64_t expected = 2; expected <= 4; ++expected) {
    core.tick(now);
    sent = take_all(core, Kind::kDeliver);
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].connection == 1);
    CHECK(sent[0].deliveries == expected);
    CHECK(core.counters().order_retries == expected - 1);
    REQUIRE(core.nak(1, sent[0].delivery, std::nullopt, now));
    now += milliseconds(1000);
  }
  core.tick(now);
  sent = take_all(core, Kind::kDeliver);
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].deliveries == 5);
  REQUIRE(core.ack(1, sent[0].delivery, now));
  CHECK(take(core, Kind::kAck).size() == 1);
}

TEST_CASE("ordered: a message that waited behind its key while another handler failed it is new to the handler",
          "[unit]") {
  DispatchCore core(settings(2));
  core.connect(1, 0, kStart);
  core.connect(2, 1, kStart);
  core.arrive(ordered(1, "k"), kStart);
  core.arrive(ordered(2, "k", 0b11), kStart);  // for the unordered handler too; waits behind 1 for handler 0
  auto sent = take_all(core, Kind::kDeliver);
  REQUIRE(sent.size() == 2);
  const Effect first = sent[0].connection == 1 ? sent[0] : sent[1];
  const Effect other = sent[0].connection == 2 ? sent[0] : sent[1];
  REQUIRE(core.nak(2, other.delivery, std::nullopt, kStart));  // the unordered handler fails 2
  REQUIRE(core.ack(1, first.delivery, kStart));
  sent = take_all(core, Kind::kDeliver);
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].message / 100 == 2);
  CHECK(sent[0].deliveries == 1);  // handler 0 has not had it before
}

TEST_CASE("ordered: a timeout or a disconnect keeps the message for the handler and its place in the key", "[unit]") {
  DispatchCore core(settings(1));
  core.connect(1, 0, kStart);
  core.arrive(ordered(1, "k"), kStart);
  core.arrive(ordered(2, "k"), kStart);
  auto sent = take_all(core, Kind::kDeliver);
  REQUIRE(sent.size() == 1);
  core.tick(kStart + milliseconds(1000));  // ack_timeout
  CHECK(take(core, Kind::kFailed).size() == 1);
  CHECK(take_all(core, Kind::kNak).empty());
  core.tick(kStart + milliseconds(1100));
  sent = take_all(core, Kind::kDeliver);
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].message / 100 == 1);

  core.connect(2, 0, kStart + milliseconds(1100));  // a second instance gets nothing of the key
  CHECK(delivered(core).empty());
  core.disconnect(1, kStart + milliseconds(1200));
  CHECK(take(core, Kind::kFailed).size() == 1);
  CHECK(take_all(core, Kind::kNak).empty());
  core.tick(kStart + milliseconds(1500));
  sent = take_all(core, Kind::kDeliver);
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].message / 100 == 1);
  CHECK(sent[0].connection == 2);
  REQUIRE(core.ack(2, sent[0].delivery, kStart + milliseconds(1500)));
  CHECK(delivered(core) == std::vector<std::uint64_t>{2});
}

TEST_CASE("ordered: a message only unordered recipients still owe is handed back as before", "[unit]") {
  DispatchCore core(settings(2));
  core.connect(1, 0, kStart);
  core.connect(2, 1, kStart);
  core.arrive(ordered(1, "k", 0b11), kStart);
  const auto sent = take_all(core, Kind::kDeliver);
  REQUIRE(sent.size() == 2);
  const auto& to_unordered = sent[0].connection == 2 ? sent[0] : sent[1];
  const auto& to_ordered = sent[0].connection == 2 ? sent[1] : sent[0];
  REQUIRE(core.nak(2, to_unordered.delivery, std::nullopt, kStart));
  CHECK(take_all(core, Kind::kNak).empty());  // the ordered one still has it in flight
  REQUIRE(core.ack(1, to_ordered.delivery, kStart));
  CHECK(take_all(core, Kind::kNak).size() == 1);
  CHECK(core.held() == 0);
}

TEST_CASE("ordered: a hand-back for room takes the newest of a key, and what comes after waits until it is back",
          "[unit]") {
  DispatchCore core(settings(1));
  core.arrive(ordered(1, "k"), kStart);
  core.arrive(ordered(2, "k"), kStart);
  core.arrive(ordered(3, "k"), kStart);
  CHECK(core.hand_back_for_room(0, 2, kStart) == 1);
  const auto naks = take_all(core, Kind::kNak);
  REQUIRE(naks.size() == 1);
  CHECK(naks[0].message / 100 == 3);  // the newest: 1 and 2 need not wait for it
  core.connect(1, 0, kStart);
  auto sent = take_all(core, Kind::kDeliver);
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].message / 100 == 1);
  REQUIRE(core.ack(1, sent[0].delivery, kStart));
  sent = take_all(core, Kind::kDeliver);
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].message / 100 == 2);
  core.arrive(ordered(4, "k"), kStart);  // after 3: waits for it, at the server
  REQUIRE(core.ack(1, sent[0].delivery, kStart));
  CHECK(delivered(core).empty());
  core.arrive(ordered(3, "k", 0b01, 2), kStart + milliseconds(1000));
  sent = take_all(core, Kind::kDeliver);
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].message / 100 == 3);
  REQUIRE(core.ack(1, sent[0].delivery, kStart + milliseconds(1000)));
  CHECK(delivered(core) == std::vector<std::uint64_t>{4});

  // One that never comes back holds what came after it for order_away_hold, then the key goes on;
  // what came before it never waited (the order finding of a restart hold while full).
  DispatchCore lost(settings(1));
  lost.arrive(ordered(10, "z"), kStart);
  lost.arrive(ordered(11, "z"), kStart);
  CHECK(lost.hand_back_for_room(0, 1, kStart) == 1);
  lost.effects().clear();
  lost.connect(1, 0, kStart);
  sent = take_all(lost, Kind::kDeliver);
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].message / 100 == 10);
  REQUIRE(lost.ack(1, sent[0].delivery, kStart));
  lost.arrive(ordered(12, "z"), kStart);
  CHECK(delivered(lost).empty());
  const TimePoint until = kStart + order_away_hold(milliseconds(1000), milliseconds(500));
  lost.tick(until - milliseconds(1));
  CHECK(delivered(lost).empty());
  lost.tick(until);
  CHECK(delivered(lost) == std::vector<std::uint64_t>{12});
  CHECK(lost.counters().order_gave_up == 1);
}

TEST_CASE("ordered: a hand-back for room takes unordered messages oldest first before ordered ones newest first",
          "[unit]") {
  DispatchCore core(settings(1));
  core.arrive(ordered(1, "k"), kStart);
  core.arrive(Arrival{201, 2, 1, 0b01, false, {}}, kStart);  // no order key: unordered for handler 0
  core.arrive(ordered(3, "j"), kStart);
  core.arrive(Arrival{401, 4, 1, 0b01, false, {}}, kStart);
  core.arrive(ordered(5, "k"), kStart);
  CHECK(core.hand_back_for_room(0, 1, kStart) == 4);
  std::vector<std::uint64_t> order;
  for (const auto& nak : take_all(core, Kind::kNak)) order.push_back(nak.message / 100);
  CHECK(order == std::vector<std::uint64_t>{2, 4, 5, 3});
}

TEST_CASE("ordered: a drain hands back what waits for its key too", "[unit]") {
  DispatchCore core(settings(1));
  core.connect(1, 0, kStart);
  core.arrive(ordered(1, "k"), kStart);
  core.arrive(ordered(2, "k"), kStart);
  const auto sent = take_all(core, Kind::kDeliver);
  REQUIRE(sent.size() == 1);
  core.begin_drain(kStart, milliseconds(0));
  CHECK(take_all(core, Kind::kNak).size() == 1);  // 2, never delivered
  REQUIRE(core.ack(1, sent[0].delivery, kStart));
  CHECK(take_all(core, Kind::kAck).size() == 1);
  CHECK(core.held() == 0);
}

TEST_CASE("ordered: a reload keeps the order of what is held, and a new order_by applies to new arrivals", "[unit]") {
  DispatchCore core(settings(1));
  core.connect(1, 0, kStart);
  core.arrive(ordered(1, "k"), kStart);
  core.arrive(ordered(2, "k"), kStart);
  const auto sent = take_all(core, Kind::kDeliver);
  REQUIRE(sent.size() == 1);
  // The handler moves to index 1 behind a new one, and is no longer ordered: new arrivals carry no key.
  HandlerReindex reindex;
  reindex.old_to_new = {std::size_t{1}};
  reindex.handlers.assign(2, HandlerLimits{8, milliseconds(1000)});
  reindex.nak_delay = milliseconds(100);
  reindex.nak_delay_max = milliseconds(1000);
  core.reconfigure(reindex, kStart);
  core.effects().clear();
  core.arrive(Arrival{300, 3, 1, 0b10, false, {}}, kStart);
  CHECK(delivered(core) == std::vector<std::uint64_t>{3});  // unordered now: at once
  REQUIRE(core.ack(1, sent[0].delivery, kStart));
  CHECK(delivered(core) == std::vector<std::uint64_t>{2});  // held before the reload: still in order
}

TEST_CASE(
    "ordered: a message let go by the older one of its key is told as kOrderReleased, one that never waited is not",
    "[unit]") {
  DispatchCore core(settings(2));
  core.connect(1, 0, kStart);
  core.connect(2, 1, kStart);
  core.arrive(ordered(1, "a", 0b11), kStart);
  core.arrive(ordered(2, "a", 0b11), kStart);
  core.arrive(ordered(3, "b", 0b11), kStart);
  const std::vector<Effect> sent = take_all(core, Kind::kDeliver);
  CHECK(take(core, Kind::kOrderReleased).empty());
  const auto first =
      std::find_if(sent.begin(), sent.end(), [](const Effect& e) { return e.connection == 1 && e.message / 100 == 1; });
  REQUIRE(first != sent.end());
  REQUIRE(core.ack(1, first->delivery, kStart + milliseconds(5)));
  const std::vector<Effect> released = take(core, Kind::kOrderReleased);
  REQUIRE(released.size() == 1);
  CHECK(released[0].message / 100 == 2);
  CHECK(released[0].handler == 0);
  CHECK(delivered(core) == std::vector<std::uint64_t>{2});
}
