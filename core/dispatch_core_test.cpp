#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <variant>

#include "core_test_support.hpp"
#include "dispatch_core.hpp"

using namespace jetfan;
using Kind = Effect::Kind;
using std::chrono::milliseconds;

namespace {

const TimePoint kStart{};

CoreSettings settings(std::size_t handlers, AckPolicy policy = AckPolicy::kExplicit) {
  return testing::core_settings(handlers, 4, policy);
}

// Takes the core's effects and makes them easy to assert on.
struct Taken {
  std::vector<Effect> all;
  explicit Taken(DispatchCore& core) : all(testing::take_effects(core)) {}
  std::vector<Effect> of(Kind kind) const { return testing::effects_of(all, kind); }
  std::size_t count(Kind kind) const { return of(kind).size(); }
};

Arrival arrival(std::uint64_t seq, HandlerMask recipients, std::uint64_t deliveries = 1) {
  return Arrival{seq * 100 + deliveries, seq, deliveries, recipients};
}

}  // namespace

TEST_CASE("a message is acked only once every recipient has acked", "[unit]") {
  DispatchCore core(settings(2));
  core.connect(1, 0, kStart);
  core.connect(2, 1, kStart);
  core.arrive(arrival(7, 0b11), kStart);
  Taken sent(core);
  REQUIRE(sent.count(Kind::kDeliver) == 2);
  const auto to_first = sent.of(Kind::kDeliver)[0];
  const auto to_second = sent.of(Kind::kDeliver)[1];
  CHECK(core.ack(to_first.connection, to_first.delivery, kStart));
  CHECK(Taken(core).count(Kind::kAck) == 0);
  CHECK(core.ack(to_second.connection, to_second.delivery, kStart));
  Taken done(core);
  REQUIRE(done.count(Kind::kAck) == 1);
  CHECK(done.of(Kind::kAck)[0].message == 701);
  CHECK(done.count(Kind::kRelease) == 1);
  CHECK(core.held() == 0);
}

TEST_CASE("a message nobody declared is acked at once and counted", "[unit]") {
  DispatchCore core(settings(2));
  core.arrive(arrival(1, 0), kStart);
  Taken d(core);
  CHECK(d.count(Kind::kAck) == 1);
  CHECK(core.counters().no_recipient == 1);
}

TEST_CASE("a recipient with no instance holds its messages until one connects", "[unit]") {
  DispatchCore core(settings(1));
  core.arrive(arrival(1, 0b1), kStart);
  core.arrive(arrival(2, 0b1), kStart);
  CHECK(Taken(core).all.empty());
  CHECK(core.held() == 2);
  core.tick(kStart + milliseconds(10'000));  // held is not failed, whatever the time
  Taken kept(core);
  CHECK(kept.count(Kind::kNak) == 0);
  CHECK(kept.count(Kind::kWip) == 2);  // and it is kept alive at the server
  core.connect(5, 0, kStart + milliseconds(10'000));
  Taken d(core);
  REQUIRE(d.count(Kind::kDeliver) == 2);
  CHECK(d.of(Kind::kDeliver)[0].message == 101);  // in stream order
  CHECK(d.of(Kind::kDeliver)[1].message == 201);
}

TEST_CASE("instances of one handler share its messages, least loaded first, within max_inflight", "[unit]") {
  DispatchCore core(settings(1));
  core.connect(1, 0, kStart);
  core.connect(2, 0, kStart);
  for (std::uint64_t seq = 1; seq <= 10; ++seq) core.arrive(arrival(seq, 0b1), kStart);
  Taken d(core);
  std::map<ConnectionId, int> per_connection;
  for (const auto& e : d.of(Kind::kDeliver)) ++per_connection[e.connection];
  CHECK(per_connection[1] == 4);  // max_inflight 4 each
  CHECK(per_connection[2] == 4);
  CHECK(core.held() == 10);
  const auto first = d.of(Kind::kDeliver)[0];
  core.ack(first.connection, first.delivery, kStart);
  Taken more(core);
  REQUIRE(more.count(Kind::kDeliver) == 1);
  CHECK(more.of(Kind::kDeliver)[0].connection == first.connection);
}

TEST_CASE("a NAK fails the delivery, the nak waits for the other recipients, then goes with a growing delay",
          "[unit]") {
  DispatchCore core(settings(2));
  core.connect(1, 0, kStart);
  core.connect(2, 1, kStart);
  core.arrive(arrival(3, 0b11, 3), kStart);
  Taken sent(core);
  const auto a = sent.of(Kind::kDeliver)[0];
  const auto b = sent.of(Kind::kDeliver)[1];
  core.nak(a.connection, a.delivery, std::nullopt, kStart);
  CHECK(Taken(core).count(Kind::kNak) == 0);  // b still has it
  core.ack(b.connection, b.delivery, kStart);
  Taken d(core);
  REQUIRE(d.count(Kind::kNak) == 1);
  CHECK(d.of(Kind::kNak)[0].delay == milliseconds(400));  // 100ms doubled per earlier delivery
  CHECK(d.count(Kind::kAck) == 0);

  // Redelivered: only the recipient that still owes it receives it.
  core.arrive(arrival(3, 0b11, 4), kStart);
  Taken again(core);
  REQUIRE(again.count(Kind::kDeliver) == 1);
  CHECK(again.of(Kind::kDeliver)[0].connection == a.connection);
  core.ack(a.connection, again.of(Kind::kDeliver)[0].delivery, kStart);
  CHECK(Taken(core).count(Kind::kAck) == 1);
}

TEST_CASE("the nak delay is capped, and a handler's own delay is honoured", "[unit]") {
  DispatchCore core(settings(1));
  core.connect(1, 0, kStart);
  core.arrive(arrival(1, 0b1, 20), kStart);
  auto d = Taken(core).of(Kind::kDeliver)[0];
  core.nak(d.connection, d.delivery, std::nullopt, kStart);
  CHECK(Taken(core).of(Kind::kNak)[0].delay == milliseconds(1000));
  core.arrive(arrival(2, 0b1, 20), kStart);
  d = Taken(core).of(Kind::kDeliver)[0];
  core.nak(d.connection, d.delivery, milliseconds(5), kStart);
  CHECK(Taken(core).of(Kind::kNak)[0].delay == milliseconds(5));
}

TEST_CASE("no confirmation within ack_timeout fails the delivery, WIP extends it", "[unit]") {
  DispatchCore core(settings(1));
  core.connect(1, 0, kStart);
  core.arrive(arrival(1, 0b1), kStart);
  core.arrive(arrival(2, 0b1), kStart);
  Taken sent(core);
  const auto first = sent.of(Kind::kDeliver)[0];
  REQUIRE(core.next_wakeup() == kStart + milliseconds(500));  // the keepalive comes first
  core.wip(first.connection, first.delivery, kStart + milliseconds(900));
  core.tick(kStart + milliseconds(1000));
  Taken d(core);
  REQUIRE(d.count(Kind::kNak) == 1);
  CHECK(d.of(Kind::kNak)[0].message == 201);
  CHECK(core.counters().failed_timeout == 1);
  core.tick(kStart + milliseconds(1900));
  CHECK(Taken(core).of(Kind::kNak)[0].message == 101);
  CHECK_FALSE(core.ack(first.connection, first.delivery, kStart));  // too late
  CHECK(core.counters().unknown_confirmations == 1);
}

TEST_CASE("time jetfan did not run does not count against ack_timeout", "[unit]") {
  // The fault run jetfan-stop, seed 990907225, stream seq 9089: dispatched to handlers C and D just
  // before SIGSTOP, its MSGs went out only after SIGCONT 7.8 s later (ack_timeout 5 s); both ACKed
  // within 30 us, but the first tick() after SIGCONT ran before jetfan read those ACKs, failed both
  // deliveries, nak'd, and the server's redelivery went to C and D again.
  DispatchCore core(settings(2));  // ack_timeout 1000ms
  core.connect(1, 0, kStart);
  core.connect(2, 1, kStart);
  core.arrive(arrival(9089, 0b11), kStart);
  core.arrive(arrival(9090, 0b01), kStart);  // never answered: must still fail, once its time is up
  Taken sent(core);
  REQUIRE(sent.count(Kind::kDeliver) == 3);
  const auto to_c = sent.of(Kind::kDeliver)[0];
  const auto to_d = sent.of(Kind::kDeliver)[1];
  const auto unanswered = sent.of(Kind::kDeliver)[2];
  REQUIRE(to_c.message == 908901);
  REQUIRE(to_d.message == 908901);

  // Stopped from kStart + 1ms to kStart + 1600ms: the daemon notices the gap, then the timer fires.
  const TimePoint resumed = kStart + milliseconds(1600);
  core.extend_deadlines(milliseconds(1599));
  core.tick(resumed);
  Taken after_stall(core);
  CHECK(after_stall.count(Kind::kFailed) == 0);
  CHECK(after_stall.count(Kind::kNak) == 0);
  CHECK(core.counters().failed_timeout == 0);

  // The ACKs that were waiting in the sockets are read next: they settle the message.
  CHECK(core.ack(to_c.connection, to_c.delivery, resumed));
  CHECK(core.ack(to_d.connection, to_d.delivery, resumed));
  Taken acked(core);
  REQUIRE(acked.count(Kind::kAck) == 1);
  CHECK(acked.of(Kind::kAck)[0].message == 908901);
  CHECK(acked.count(Kind::kNak) == 0);

  // A copy the server delivered meanwhile (AckWait ran out during the stop) troubles no handler.
  core.arrive(arrival(9089, 0b11, 2), resumed);
  Taken copy(core);
  CHECK(copy.count(Kind::kDeliver) == 0);
  CHECK(copy.count(Kind::kAck) == 1);

  // The stall is given back, no more: an unanswered delivery fails at its deadline plus the stall.
  core.tick(kStart + milliseconds(2598));
  CHECK(Taken(core).count(Kind::kFailed) == 0);
  core.tick(kStart + milliseconds(2599));
  Taken late(core);
  REQUIRE(late.count(Kind::kFailed) == 1);
  CHECK(late.of(Kind::kFailed)[0].delivery == unanswered.delivery);
  CHECK(late.of(Kind::kFailed)[0].cause == FailCause::kTimeout);
  REQUIRE(late.count(Kind::kNak) == 1);
  CHECK(late.of(Kind::kNak)[0].message == 909001);
}

TEST_CASE("every failed delivery is reported with its cause, before its message is handed back", "[unit]") {
  DispatchCore core(settings(1));
  core.connect(1, 0, kStart);
  core.connect(2, 0, kStart);
  for (std::uint64_t seq = 1; seq <= 3; ++seq) core.arrive(arrival(seq, 0b1), kStart);
  auto sent = Taken(core).of(Kind::kDeliver);
  core.nak(sent[0].connection, sent[0].delivery, std::nullopt, kStart);
  Taken nak(core);
  REQUIRE(nak.all.size() >= 2);
  CHECK(nak.all[0].kind == Kind::kFailed);
  CHECK(nak.all[0].cause == FailCause::kNak);
  CHECK(nak.all[0].message == sent[0].message);
  CHECK(nak.all[0].connection == sent[0].connection);
  CHECK(nak.all[0].delivery == sent[0].delivery);
  CHECK(nak.all[1].kind == Kind::kNak);
  core.tick(kStart + milliseconds(1000));
  const auto timed_out = Taken(core).of(Kind::kFailed);
  REQUIRE(timed_out.size() == 2);
  CHECK(timed_out[0].cause == FailCause::kTimeout);
  core.arrive(arrival(4, 0b1), kStart + milliseconds(1000));
  const auto on = Taken(core).of(Kind::kDeliver).at(0).connection;
  core.disconnect(on, kStart + milliseconds(1000));
  const auto gone = Taken(core).of(Kind::kFailed);
  REQUIRE(gone.size() == 1);
  CHECK(gone[0].cause == FailCause::kDisconnect);
}

TEST_CASE("a failure is handed back at once while another recipient has no instance at all", "[unit]") {
  DispatchCore core(settings(2));
  core.connect(1, 0, kStart);  // handler 1 has no instance
  core.arrive(arrival(1, 0b11), kStart);
  const auto sent = Taken(core).of(Kind::kDeliver).at(0);
  core.nak(sent.connection, sent.delivery, std::nullopt, kStart);
  Taken d(core);
  REQUIRE(d.count(Kind::kNak) == 1);  // not held until handler 1 comes
  // Redelivered, it goes to handler 0 again and waits for handler 1 again, failure-free: held.
  core.arrive(arrival(1, 0b11, 2), kStart);
  const auto again = Taken(core).of(Kind::kDeliver).at(0);
  core.ack(again.connection, again.delivery, kStart);
  Taken held(core);
  CHECK(held.count(Kind::kNak) + held.count(Kind::kAck) == 0);
  CHECK(core.held() == 1);
}

TEST_CASE("a failure waits while another recipient only waits for room on a connected instance", "[unit]") {
  auto s = settings(2);
  s.handlers[1].max_inflight = 1;
  DispatchCore core(s);
  core.connect(1, 0, kStart);
  core.connect(2, 1, kStart);
  core.arrive(arrival(1, 0b10), kStart);  // fills handler 1's one slot
  core.arrive(arrival(2, 0b11), kStart);  // handler 1 must wait for room
  auto sent = Taken(core).of(Kind::kDeliver);
  const auto to_zero = sent[0].connection == 1 ? sent[0] : sent[1].connection == 1 ? sent[1] : sent[2];
  REQUIRE(to_zero.message == 201);
  core.nak(to_zero.connection, to_zero.delivery, std::nullopt, kStart);
  CHECK(Taken(core).count(Kind::kNak) == 0);  // handler 1 gets it as soon as it has room
  // When handler 1's last instance goes, the message no longer waits for it.
  core.disconnect(2, kStart);
  CHECK(Taken(core).count(Kind::kNak) == 2);
}

TEST_CASE("loads say what each handler owes and since when", "[unit]") {
  DispatchCore core(settings(2));
  core.connect(1, 0, kStart);
  core.arrive(arrival(1, 0b11), kStart);
  core.arrive(arrival(2, 0b10), kStart + milliseconds(5));
  core.arrive(arrival(3, 0b01), kStart + milliseconds(9));
  const auto sent = Taken(core).of(Kind::kDeliver);
  core.ack(1, sent[0].delivery, kStart);  // handler 0 confirms sequence 1
  const auto load = core.loads();
  CHECK(load[0].owed == 1);
  CHECK(load[0].in_flight == 1);
  CHECK(load[0].connections == 1);
  CHECK(load[0].oldest_unconfirmed == kStart + milliseconds(9));
  CHECK(load[1].owed == 2);
  CHECK(load[1].in_flight == 0);
  CHECK(load[1].queued == 2);
  CHECK(load[1].connections == 0);
  CHECK(load[1].oldest_unconfirmed == kStart);
}

TEST_CASE("handing back a stuck handler's oldest messages frees room, and only it gets them again", "[unit]") {
  DispatchCore core(settings(2));
  core.connect(1, 0, kStart);  // handler 1 has no instance: it is stuck
  for (std::uint64_t seq = 1; seq <= 5; ++seq) core.arrive(arrival(seq, 0b11), kStart);
  for (const auto& e : Taken(core).of(Kind::kDeliver)) core.ack(1, e.delivery, kStart);
  core.effects().clear();
  CHECK(core.held() == 5);
  CHECK(core.hand_back_for_room(1, 2, kStart) == 3);
  Taken d(core);
  const auto naks = d.of(Kind::kNak);
  REQUIRE(naks.size() == 3);
  CHECK(naks[0].message == 101);  // the oldest first
  CHECK(naks[2].message == 301);
  CHECK(naks[0].delay == milliseconds(1000));  // nak_delay_max: long enough for new messages to pass
  CHECK(core.held() == 2);
  CHECK(core.counters().handed_back_for_room == 3);
  CHECK(core.hand_back_for_room(1, 2, kStart) == 0);  // within its share now
  // Back from the server: handler 0 confirmed it already, so it waits for handler 1 alone.
  CHECK(core.confirmed_before(1) == 0b01);  // what jetfan tail names: handler 1 alone
  CHECK(core.confirmed_before(4) == 0b01);  // still held, acked by handler 0
  CHECK(core.confirmed_before(9) == 0);     // never seen
  core.arrive(arrival(1, 0b11, 2), kStart);
  CHECK(Taken(core).count(Kind::kDeliver) == 0);
  core.connect(2, 1, kStart);
  const auto to_one = Taken(core).of(Kind::kDeliver);
  CHECK(to_one.size() == 3);
  for (const auto& e : to_one) CHECK(e.connection == 2);
}

TEST_CASE("a disconnect fails what was in flight on that connection only", "[unit]") {
  DispatchCore core(settings(1));
  core.connect(1, 0, kStart);
  core.connect(2, 0, kStart);
  core.arrive(arrival(1, 0b1), kStart);
  core.arrive(arrival(2, 0b1), kStart);
  Taken sent(core);
  const auto on_one =
      sent.of(Kind::kDeliver)[0].connection == 1 ? sent.of(Kind::kDeliver)[0] : sent.of(Kind::kDeliver)[1];
  core.disconnect(1, kStart);
  Taken d(core);
  REQUIRE(d.count(Kind::kNak) == 1);
  CHECK(d.of(Kind::kNak)[0].message == on_one.message);
  CHECK(core.held() == 1);
}

TEST_CASE("TERM from every recipient terminates, TERM and ACK terminates, TERM and NAK naks", "[unit]") {
  DispatchCore core(settings(2));
  core.connect(1, 0, kStart);
  core.connect(2, 1, kStart);
  core.arrive(arrival(1, 0b11), kStart);
  core.arrive(arrival(2, 0b11), kStart);
  Taken sent(core);
  auto deliveries = sent.of(Kind::kDeliver);
  auto find = [&](MessageHandle m, ConnectionId c) {
    for (const auto& e : deliveries) {
      if (e.message == m && e.connection == c) return e.delivery;
    }
    FAIL("no delivery");
    return DeliveryId{};
  };
  core.term(1, find(101, 1), kStart);
  core.ack(2, find(101, 2), kStart);
  Taken one(core);
  CHECK(one.count(Kind::kTerm) == 1);
  CHECK(one.count(Kind::kAck) == 0);
  core.term(1, find(201, 1), kStart);
  core.nak(2, find(201, 2), std::nullopt, kStart);
  Taken two(core);
  CHECK(two.count(Kind::kNak) == 1);
  core.arrive(arrival(2, 0b11, 2), kStart);
  Taken again(core);
  REQUIRE(again.count(Kind::kDeliver) == 1);  // the one that TERMed does not get it back
  CHECK(again.of(Kind::kDeliver)[0].connection == 2);
  core.ack(2, again.of(Kind::kDeliver)[0].delivery, kStart);
  CHECK(Taken(core).count(Kind::kTerm) == 1);  // still terminated: one recipient called it poison
}

TEST_CASE("a redelivery of a message still held changes nothing but the copy answered on", "[unit]") {
  DispatchCore core(settings(1));
  core.connect(1, 0, kStart);
  core.arrive(arrival(1, 0b1, 1), kStart);
  const auto sent = Taken(core).of(Kind::kDeliver)[0];
  core.arrive(arrival(1, 0b1, 2), kStart);
  Taken dup(core);
  CHECK(dup.count(Kind::kDeliver) == 0);
  CHECK(dup.of(Kind::kRelease)[0].message == 101);
  core.ack(1, sent.delivery, kStart);
  CHECK(Taken(core).of(Kind::kAck)[0].message == 102);
}

TEST_CASE("AckPolicy all acks only the highest sequence below which everything is settled", "[unit]") {
  DispatchCore core(settings(1, AckPolicy::kAll));
  core.connect(1, 0, kStart);
  for (std::uint64_t seq = 1; seq <= 3; ++seq) core.arrive(arrival(seq, 0b1), kStart);
  auto sent = Taken(core).of(Kind::kDeliver);
  core.ack(1, sent[1].delivery, kStart);
  core.ack(1, sent[2].delivery, kStart);
  CHECK(Taken(core).count(Kind::kAck) == 0);  // 1 is still held: acking 3 would ack it too
  core.ack(1, sent[0].delivery, kStart);
  Taken d(core);
  REQUIRE(d.count(Kind::kAck) == 1);
  CHECK(d.of(Kind::kAck)[0].message == 301);
  CHECK(d.count(Kind::kRelease) == 3);
  CHECK(core.held() == 0);
}

TEST_CASE("AckPolicy all: a nak'd message holds the floor until it comes back, unless MaxDeliver is reached",
          "[unit]") {
  auto s = settings(1, AckPolicy::kAll);
  s.max_deliver = 2;
  DispatchCore core(s);
  core.connect(1, 0, kStart);
  core.arrive(arrival(1, 0b1), kStart);
  core.arrive(arrival(2, 0b1), kStart);
  auto sent = Taken(core).of(Kind::kDeliver);
  core.nak(1, sent[0].delivery, std::nullopt, kStart);
  core.ack(1, sent[1].delivery, kStart);
  CHECK(Taken(core).count(Kind::kAck) == 0);
  core.arrive(arrival(1, 0b1, 2), kStart);
  const auto again = Taken(core).of(Kind::kDeliver)[0];
  core.nak(1, again.delivery, std::nullopt, kStart);  // its last delivery
  Taken d(core);
  REQUIRE(d.count(Kind::kAck) == 1);
  CHECK(d.of(Kind::kAck)[0].message == 201);
}

TEST_CASE("AckPolicy none sends nothing to the server", "[unit]") {
  DispatchCore core(settings(1, AckPolicy::kNone));
  core.connect(1, 0, kStart);
  core.arrive(arrival(1, 0b1), kStart);
  core.arrive(arrival(2, 0), kStart);
  const auto sent = Taken(core).of(Kind::kDeliver)[0];
  core.nak(1, sent.delivery, std::nullopt, kStart);
  core.tick(kStart + milliseconds(10'000));
  Taken d(core);
  CHECK(d.count(Kind::kAck) + d.count(Kind::kNak) + d.count(Kind::kTerm) + d.count(Kind::kWip) == 0);
  CHECK(core.held() == 0);
}

TEST_CASE("draining naks at once what is not in flight, waits for what is, then abandons the rest", "[unit]") {
  DispatchCore core(settings(2));
  core.connect(1, 0, kStart);
  core.arrive(arrival(1, 0b01), kStart);  // in flight
  core.arrive(arrival(2, 0b10), kStart);  // held: handler 1 has no instance
  core.arrive(arrival(3, 0b01), kStart);  // in flight
  auto sent = Taken(core).of(Kind::kDeliver);
  core.begin_drain(kStart, milliseconds(0));
  Taken first(core);
  REQUIRE(first.count(Kind::kNak) == 1);
  CHECK(first.of(Kind::kNak)[0].message == 201);
  CHECK(first.of(Kind::kNak)[0].delay == milliseconds(0));
  core.ack(1, sent[0].delivery, kStart);
  CHECK(Taken(core).count(Kind::kAck) == 1);
  core.arrive(arrival(4, 0b01), kStart);  // pulled before the drain began
  Taken late(core);
  CHECK(late.count(Kind::kDeliver) == 0);
  CHECK(late.count(Kind::kNak) == 1);
  core.abandon_all(kStart);
  Taken rest(core);
  REQUIRE(rest.count(Kind::kNak) == 1);
  CHECK(rest.of(Kind::kNak)[0].message == 301);
  CHECK(rest.of(Kind::kNak)[0].delay == milliseconds(0));
  CHECK(core.held() == 0);
}

TEST_CASE("memory of confirmations is bounded", "[unit]") {
  auto s = settings(2);
  s.remember = 3;
  DispatchCore core(s);
  core.connect(1, 0, kStart);
  core.connect(2, 1, kStart);
  for (std::uint64_t seq = 1; seq <= 5; ++seq) {
    core.arrive(arrival(seq, 0b11), kStart);
    auto sent = Taken(core).of(Kind::kDeliver);
    core.ack(sent[0].connection, sent[0].delivery, kStart);
    core.nak(sent[1].connection, sent[1].delivery, std::nullopt, kStart);
  }
  // 1 and 2 were forgotten: redelivered, they go to both recipients again (at least once).
  core.arrive(arrival(1, 0b11, 2), kStart);
  CHECK(Taken(core).count(Kind::kDeliver) == 2);
  core.arrive(arrival(5, 0b11, 2), kStart);
  CHECK(Taken(core).count(Kind::kDeliver) == 1);
}

TEST_CASE("a message whose subject has no key is terminated at once, and counted", "[unit]") {
  DispatchCore core(settings(1));
  core.connect(1, 0, kStart);
  core.arrive(Arrival{55, 0, 1, 0, true}, kStart);
  Taken d(core);
  CHECK(d.count(Kind::kDeliver) == 0);
  REQUIRE(d.count(Kind::kTerm) == 1);
  CHECK(d.of(Kind::kTerm)[0].message == 55);
  CHECK(d.count(Kind::kRelease) == 1);
  CHECK(core.counters().unroutable == 1);
  CHECK(core.held() == 0);

  DispatchCore none(settings(1, AckPolicy::kNone));
  none.arrive(Arrival{56, 0, 1, 0, true}, kStart);
  Taken quiet(none);
  CHECK(quiet.count(Kind::kTerm) == 0);
  CHECK(quiet.count(Kind::kRelease) == 1);
}

TEST_CASE("a copy of a message already settled is settled again without troubling any handler", "[unit]") {
  DispatchCore core(settings(2));
  core.connect(1, 0, kStart);
  core.connect(2, 1, kStart);
  core.arrive(arrival(1, 0b11), kStart);
  core.arrive(arrival(2, 0b01), kStart);
  for (const auto& e : Taken(core).of(Kind::kDeliver)) {
    if (e.message == 201) {
      core.term(e.connection, e.delivery, kStart);
    } else {
      core.ack(e.connection, e.delivery, kStart);
    }
  }
  Taken settled(core);
  CHECK(settled.count(Kind::kAck) == 1);
  CHECK(settled.count(Kind::kTerm) == 1);
  // The server lost both (it restarted) and delivers them again.
  core.arrive(arrival(1, 0b11, 2), kStart);
  core.arrive(arrival(2, 0b01, 2), kStart);
  Taken again(core);
  CHECK(again.count(Kind::kDeliver) == 0);
  REQUIRE(again.count(Kind::kAck) == 1);
  CHECK(again.of(Kind::kAck)[0].message == 102);
  REQUIRE(again.count(Kind::kTerm) == 1);
  CHECK(again.of(Kind::kTerm)[0].message == 202);
  CHECK(again.count(Kind::kRelease) == 2);
  CHECK(core.counters().already_settled == 2);
  CHECK(core.held() == 0);

  // Once the history is forgotten (the consumer was made anew), a copy goes to the handlers again.
  core.forget_history();
  core.arrive(arrival(1, 0b11, 3), kStart);
  CHECK(Taken(core).count(Kind::kDeliver) == 2);
}

TEST_CASE("AckPolicy all: a copy of a settled message waits for the floor when a lower one is unsettled", "[unit]") {
  auto s = settings(1, AckPolicy::kAll);
  s.remember = 1;  // the record keeps only the highest sequence settled
  DispatchCore core(s);
  core.connect(1, 0, kStart);
  core.arrive(arrival(1, 0b1), kStart);
  core.arrive(arrival(2, 0b1), kStart);
  for (const auto& e : Taken(core).of(Kind::kDeliver)) core.ack(1, e.delivery, kStart);
  REQUIRE(Taken(core).of(Kind::kAck).back().message == 201);
  // The server lost the ack. Sequence 1 was forgotten, so it goes to the handler again; sequence 2
  // is remembered, but acking it now would ack 1 with it.
  core.arrive(arrival(1, 0b1, 2), kStart);
  core.arrive(arrival(2, 0b1, 2), kStart);
  Taken waiting(core);
  REQUIRE(waiting.count(Kind::kDeliver) == 1);
  CHECK(waiting.count(Kind::kAck) == 0);
  core.ack(1, waiting.of(Kind::kDeliver)[0].delivery, kStart);
  Taken floor(core);
  REQUIRE(floor.count(Kind::kAck) == 1);
  CHECK(floor.of(Kind::kAck)[0].message == 202);
  CHECK(core.held() == 0);
}

TEST_CASE("draining hands back with a delay that runs out when the last pull request does", "[unit]") {
  DispatchCore core(settings(1));
  core.connect(1, 0, kStart);
  core.arrive(arrival(1, 0b1), kStart);  // in flight
  core.arrive(arrival(2, 0b1), kStart);  // in flight
  auto sent = Taken(core).of(Kind::kDeliver);
  core.arrive(arrival(3, 0b1), kStart);  // queued: max_inflight is 4, so put two more in flight first
  core.arrive(arrival(4, 0b1), kStart);
  core.arrive(arrival(5, 0b1), kStart);  // queued
  core.effects().clear();
  core.begin_drain(kStart, milliseconds(3000));
  Taken idle(core);
  REQUIRE(idle.count(Kind::kNak) == 1);
  CHECK(idle.of(Kind::kNak)[0].delay == milliseconds(3000));
  core.nak(1, sent[0].delivery, milliseconds(10), kStart + milliseconds(1000));
  Taken failed(core);
  REQUIRE(failed.count(Kind::kNak) == 1);
  CHECK(failed.of(Kind::kNak)[0].delay == milliseconds(2000));  // the handler's 10ms would be too soon
  core.arrive(arrival(6, 0b1), kStart + milliseconds(2500));    // pulled before the drain began
  CHECK(Taken(core).of(Kind::kNak).at(0).delay == milliseconds(500));
  core.abandon_all(kStart + milliseconds(4000));
  Taken rest(core);
  CHECK(rest.count(Kind::kNak) == 3);
  for (const auto& e : rest.of(Kind::kNak)) CHECK(e.delay == milliseconds(0));
  CHECK(core.held() == 0);
}

// The randomized model test. A model server publishes (sometimes a subject with no key),
// redelivers what was nak'd, sometimes redelivers what is still held, sometimes loses acks and
// redelivers what was settled, sometimes loses a delivery on its way to jetfan (a broken connection,
// a leader change: the core sees a jump in the consumer sequence at the next arrival) and sends it
// again after AckWait, and sometimes stalls: nothing arrives for up to an AckWait, and then what it
// sent meanwhile arrives in the order sent, so that proof by a late message or a pull's answer is
// tested too; model handlers connect, disconnect and answer at random; now and then
// a reload adds, removes, reorders handlers and changes their max_inflight and which of them are
// ordered (by one of a few keys). Every effect is checked by DispatchChecker against the rules of
// docs/dispatch-rules.md it marks "checked" (a failure names the rule), the order of every ordered handler's keys
// included. Runs end either by settling everything or by a drain, which must hand everything back with the right delay.
namespace {

struct Model {
  Model(unsigned seed, AckPolicy policy, std::size_t handlers)
      : random(seed),
        policy(policy),
        handler_count(handlers),
        limits(handlers, 4),
        ordered(handlers),
        core(make_settings(handlers)) {
    for (std::size_t h = 0; h < handlers; ++h) ordered[h] = pick(2) == 0;
    core.bound(0, 0);  // a consumer that has delivered nothing yet
  }

  // Some handlers have a retry budget, some of those dead letters.
  RetryPolicy random_policy() {
    if (pick(2) == 0) return RetryPolicy{};
    return RetryPolicy{static_cast<std::uint32_t>(1 + pick(3)), milliseconds(1 + pick(50)), milliseconds(400),
                       pick(3) != 0};
  }
  // Some handlers have a max_rate (R48): slow enough that the model's steps run into it.
  double random_rate() { return pick(3) == 0 ? 0.5 + static_cast<double>(pick(40)) : 0; }
  // Some have an adaptive in-flight limit (R49), its floor anywhere up to max_inflight.
  void random_adaptive(HandlerLimits& handler) {
    handler.adaptive_inflight = pick(3) == 0;
    handler.min_inflight = static_cast<std::uint32_t>(1 + pick(handler.max_inflight));
  }
  CoreSettings make_settings(std::size_t handlers) {
    CoreSettings s = settings(handlers, policy);
    for (auto& handler : s.handlers) {
      handler.retry = random_policy();
      handler.max_rate = random_rate();
      random_adaptive(handler);
    }
    for (const auto& handler : s.handlers) retry.push_back(handler.retry);
    return s;
  }

  std::size_t pick(std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(random); }
  HandlerMask bit(std::size_t h) const { return HandlerMask{1} << h; }
  bool all_confirmed(std::uint64_t seq) { return (confirmed[seq] & recipients[seq]) == recipients[seq]; }

  void deliver_from_server(std::uint64_t seq) {
    const MessageHandle handle = next_handle++;
    seq_of[handle] = seq;
    const bool no_key = unroutable.count(seq) != 0;
    if (!settled_at_server.count(seq) && !no_key) held_by_core.insert(seq);
    std::vector<OrderKey> order;
    for (const auto& [h, key] : order_keys[seq]) order.push_back(OrderKey{h, key});
    away_until.erase(seq);
    latest_copy[seq] = handle;
    Arrival arrival{handle, seq, ++deliveries[seq], recipients[seq], no_key, order};
    arrival.consumer_seq = ++consumer_seq;
    arrival.published_ns = published_ns.at(seq);
    arrival.wall_ns = wall_ns();
    core.arrive(arrival, now);
  }
  std::int64_t wall_ns() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(now - kStart).count() + 1;
  }
  // From the server: delivered now, or into the stalled connection, to arrive when it ends.
  void send(std::uint64_t seq) {
    if (stalled_until) {
      pipe.push_back(seq);
      return;
    }
    deliver_from_server(seq);
  }
  // The order rule, at a MSG of `seq` to handler `h`: nothing else of its key in flight to h, and
  // no older one of its key that h still owes held in the core or handed back and not yet given up.
  void check_order(std::uint64_t seq, std::size_t h) {
    const auto key = order_keys[seq].find(h);
    if (key == order_keys[seq].end()) return;
    for (const auto& [flight, other] : in_flight) {
      if (other == seq || connections.at(flight.first) != h) continue;
      const auto other_key = order_keys[other].find(h);
      INFO("sequence " << seq << " to handler " << h << " while " << other << " of its key is in flight to it");
      REQUIRE((other_key == order_keys[other].end() || other_key->second != key->second));
    }
    for (const auto& [older, keys] : order_keys) {
      if (older >= seq) break;
      const auto older_key = keys.find(h);
      if (older_key == keys.end() || older_key->second != key->second || (confirmed[older] & bit(h))) continue;
      const auto away = away_until.find(older);
      const auto copy = latest_copy.find(older);
      const bool held = copy != latest_copy.end() && !released.count(copy->second);
      const bool present = held || (away != away_until.end() && now < away->second);
      INFO("sequence " << seq << " to handler " << h << " before " << older << " of its key was settled for it");
      REQUIRE_FALSE(present);
    }
  }
  bool owed_in_order(std::uint64_t seq) {
    for (const auto& [h, key] : order_keys[seq]) {
      if ((recipients[seq] & bit(h)) && !(confirmed[seq] & bit(h))) return true;
    }
    return false;
  }
  void publish() {
    const std::uint64_t seq = next_seq++;
    published_ns[seq] = static_cast<std::uint64_t>(wall_ns());
    if (pick(30) == 0) {
      // A subject with no key; it still has a stream sequence.
      recipients[seq] = 0;
      unroutable.insert(seq);
      send(seq);
      return;
    }
    choose_recipients(seq);
    send(seq);
  }
  void choose_recipients(std::uint64_t seq) {
    recipients[seq] = static_cast<HandlerMask>(pick(std::size_t{1} << handler_count));
    for (std::size_t h = 0; h < handler_count; ++h) {
      if (ordered[h] && (recipients[seq] & bit(h)))
        order_keys[seq][h] = std::string(1, static_cast<char>('a' + pick(3)));
    }
  }
  // The connection broke, or the consumer's leader changed, as the server sent a message: it never
  // arrives, and the server sends it again once AckWait has passed. The core learns of it only from
  // the jump in the consumer sequence at the next arrival. The order check counts a lost first
  // delivery as present until it comes back (away_until), and settled_by_ack() requires it confirmed
  // before any ack above it. Now and then what is lost is a copy of a message the core holds.
  void lose_in_transit() {
    ++consumer_seq;
    if (!held_by_core.empty() && pick(4) == 0) {
      const auto seq = *std::next(held_by_core.begin(), static_cast<long>(pick(held_by_core.size())));
      ++deliveries[seq];
      lost[seq] = now + kAckWait;
      return;
    }
    const std::uint64_t seq = next_seq++;
    published_ns[seq] = static_cast<std::uint64_t>(wall_ns());
    choose_recipients(seq);
    ++deliveries[seq];
    lost[seq] = now + kAckWait;
    away_until[seq] = TimePoint::max();
    if (!order_keys[seq].empty()) ++lost_while_ordered;
    if (policy == AckPolicy::kAll) ++lost_under_ack_all;
  }
  // Time passes until `target`; what was lost is sent again on time on the way, and a stall ends.
  void advance_to(TimePoint target) {
    for (;;) {
      auto due =
          std::min_element(lost.begin(), lost.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
      const bool stall_ends_first =
          stalled_until && *stalled_until <= target && (due == lost.end() || *stalled_until < due->second);
      if (stall_ends_first) {
        now = std::max(now, *stalled_until);
        stalled_until.reset();
        for (const auto& sent : std::exchange(pipe, {})) {
          if (const auto* seq = std::get_if<std::uint64_t>(&sent)) {
            deliver_from_server(*seq);
          } else {
            core.heard(std::get<TimePoint>(sent), now);
          }
        }
        continue;
      }
      if (due == lost.end() || due->second > target) break;
      const std::uint64_t seq = due->first;
      now = std::max(now, due->second);
      lost.erase(due);
      send(seq);
    }
    now = std::max(now, target);
  }
  // Under AckPolicy all, one ack settles every sequence up to its own at the server.
  void settled_by_ack(std::uint64_t seq) {
    if (policy != AckPolicy::kAll) {
      settled_at_server.insert(seq);
      return;
    }
    for (std::uint64_t s = 1; s <= seq; ++s) {
      if (!recipients.count(s)) continue;
      // Everything below an AckAll ack must be settled by its recipients.
      REQUIRE(all_confirmed(s));
      settled_at_server.insert(s);
      held_by_core.erase(s);
      nak_pending.erase(s);
    }
  }

  void apply() {
    // The core forgets deliveries that timed out; so does the model.
    std::erase_if(in_flight, [&](const auto& f) { return !core.is_in_flight(f.first.first, f.first.second); });
    auto effects = std::move(core.effects());
    core.effects().clear();
    for (const auto& e : effects) {
      const std::uint64_t seq = seq_of.at(e.message);
      if (unroutable.count(seq)) {
        // Terminated (unless AckPolicy none), never delivered or acked; nak'd only when a drain
        // hands back what still waits for the AckPolicy all floor.
        REQUIRE(e.kind != Kind::kDeliver);
        REQUIRE(e.kind != Kind::kAck);
        REQUIRE((e.kind != Kind::kNak || (draining && policy == AckPolicy::kAll)));
      }
      if (e.kind == Kind::kAck || e.kind == Kind::kNak || e.kind == Kind::kTerm) {
        REQUIRE(policy != AckPolicy::kNone);
        // One verb per copy at most.
        REQUIRE(answered_copies.insert(e.message).second);
      }
      switch (e.kind) {
        case Kind::kDeliver: {
          REQUIRE_FALSE(draining);
          REQUIRE(connections.count(e.connection));
          const std::size_t h = connections[e.connection];
          REQUIRE((recipients[seq] & bit(h)));
          REQUIRE_FALSE((confirmed[seq] & bit(h)));            // never send what it already confirmed
          REQUIRE_FALSE(dead_letter_pending.count({seq, h}));  // nor what is being dead-lettered for it
          REQUIRE_FALSE(dead_letter_retrying.count({seq, h}));
          REQUIRE_FALSE(paused.count(h));  // a paused handler gets nothing new
          check_order(seq, h);
          in_flight[{e.connection, e.delivery}] = seq;
          std::size_t on_connection = 0;
          for (const auto& [key, s] : in_flight) on_connection += key.first == e.connection;
          REQUIRE(on_connection <= limits[h]);  // max_inflight, the one in force now
          break;
        }
        case Kind::kAck:
          REQUIRE(all_confirmed(seq));  // never before every recipient confirmed
          REQUIRE_FALSE(ever_termed.count(seq));
          REQUIRE_FALSE(poisoned.count(seq));  // a TERM, even from a handler since removed, terminates
          ever_acked.insert(seq);
          held_by_core.erase(seq);
          settled_by_ack(seq);
          break;
        case Kind::kTerm:
          REQUIRE(all_confirmed(seq));
          REQUIRE((poisoned.count(seq) || unroutable.count(seq)));
          REQUIRE_FALSE(ever_acked.count(seq));
          ever_termed.insert(seq);
          held_by_core.erase(seq);
          settled_by_ack(seq);  // under AckPolicy all a +TERM settles everything below it too
          break;
        case Kind::kNak:
          // Only a drain under AckPolicy all hands back a copy of a settled message (delivered again
          // after its ack was lost) that still waited for the floor.
          REQUIRE((!settled_at_server.count(seq) || (draining && policy == AckPolicy::kAll)));
          REQUIRE((!all_confirmed(seq) || draining));
          if (draining) {
            const auto left = std::max(Duration(0), std::chrono::ceil<Duration>(handback_until - now));
            REQUIRE(e.delay == left);
          }
          if (!draining && owed_in_order(seq)) {
            // An ordered recipient still owes it: handed back only for room, and its key waits.
            REQUIRE(handing_back_for_room);
            away_until[seq] = now + order_away_hold(e.delay, milliseconds(500));
          }
          held_by_core.erase(seq);
          nak_pending.insert(seq);
          break;
        case Kind::kFailed: {
          REQUIRE_FALSE(released.count(e.message));  // reported before the message went
          ++failures;
          const std::size_t h = handler_of.at(e.connection);
          const std::uint32_t count = ++failed[seq][h];
          if (retry[h].max_attempts > 0 && count >= retry[h].max_attempts) must_give_up.insert({seq, h});
          break;
        }
        case Kind::kDeadLetter:
        case Kind::kGaveUp: {
          const std::size_t h = e.handler;
          const std::pair<std::uint64_t, std::size_t> key{seq, h};
          REQUIRE(h < handler_count);
          REQUIRE((recipients[seq] & bit(h)));
          REQUIRE_FALSE((confirmed[seq] & bit(h)));       // nothing dead-lettered that the handler confirmed
          REQUIRE_FALSE(dead_letter_pending.count(key));  // one publish at a time
          // A publish tried again keeps going after a reload changed the handler's policy.
          if (dead_letter_retrying.erase(key) == 0) {
            REQUIRE((e.kind == Kind::kDeadLetter) == retry[h].dead_letter);
            // A new dead letter: exactly one per used-up budget (or TERM), never a second.
            REQUIRE(given_up.insert(key).second);
            if (e.reason.termed) {
              REQUIRE(termed_for_dead_letter.erase(key) == 1);
            } else {
              REQUIRE(must_give_up.erase(key) == 1);
              REQUIRE(e.reason.attempts == failed[seq][h]);
            }
          }
          if (e.kind == Kind::kGaveUp) {
            confirmed[seq] |= bit(h);  // a TERM for it
            poisoned.insert(seq);
          } else {
            dead_letter_pending.insert(key);
            publishes[e.publish] = key;
          }
          break;
        }
        case Kind::kWip:
        case Kind::kRelease:
        case Kind::kOrderReleased:
          break;
        case Kind::kTrim:
          REQUIRE(policy == AckPolicy::kAll);
          REQUIRE(all_confirmed(seq));
          break;
        case Kind::kRedriveSettled:
        case Kind::kRedriveDropped:
          FAIL("the end of a redrive, though nothing was redriven");
          break;
      }
      if (e.kind == Kind::kRelease) REQUIRE(released.insert(e.message).second);
    }
    // Every budget used up, and every TERM of a handler with dead letters, was given up at once.
    REQUIRE(must_give_up.empty());
    REQUIRE(termed_for_dead_letter.empty());
  }

  // The answer to a dead-letter publish.
  void answer_publish(bool only_good) {
    if (publishes.empty()) return;
    auto it = std::next(publishes.begin(), static_cast<long>(pick(publishes.size())));
    const auto [id, key] = *it;
    publishes.erase(it);
    dead_letter_pending.erase(key);
    if (only_good || pick(3) != 0) {
      REQUIRE(core.dead_letter_stored(id, now));
      confirmed[key.first] |= bit(key.second);
      ++dead_letters_stored;
    } else {
      REQUIRE(core.dead_letter_failed(id, now));
      dead_letter_retrying.insert(key);
    }
  }

  void answer(bool only_good) {
    if (in_flight.empty()) return;
    auto it = std::next(in_flight.begin(), static_cast<long>(pick(in_flight.size())));
    const auto [key, seq] = *it;
    const auto [connection, delivery] = key;
    const std::size_t h = connections.at(connection);
    const int roll = only_good ? 0 : static_cast<int>(pick(100));
    in_flight.erase(it);
    if (roll < 60) {
      confirmed[seq] |= bit(h);
      REQUIRE(core.ack(connection, delivery, now));
    } else if (roll < 70) {
      if (retry[h].dead_letter) {
        termed_for_dead_letter.insert({seq, h});
      } else {
        confirmed[seq] |= bit(h);
        poisoned.insert(seq);
      }
      REQUIRE(core.term(connection, delivery, now));
    } else if (roll < 90) {
      REQUIRE(core.nak(connection, delivery, std::nullopt, now));
    } else {
      REQUIRE(core.wip(connection, delivery, now));
      in_flight[key] = seq;
    }
  }

  // A reload: a new handler table. Each handler stays (perhaps at another index) with probability 3/4.
  void reload() {
    const std::size_t new_count = 1 + pick(4);
    std::vector<std::size_t> free(new_count);
    std::iota(free.begin(), free.end(), std::size_t{0});
    std::shuffle(free.begin(), free.end(), random);
    HandlerReindex reindex;
    reindex.old_to_new.resize(handler_count);
    for (std::size_t h = 0; h < handler_count; ++h) {
      if (pick(4) != 0 && !free.empty()) {
        reindex.old_to_new[h] = free.back();
        free.pop_back();
      }
    }
    std::vector<std::uint32_t> new_limits(new_count);
    std::vector<RetryPolicy> new_retry;
    for (auto& limit : new_limits) {
      limit = static_cast<std::uint32_t>(1 + pick(4));
      new_retry.push_back(random_policy());
      reindex.handlers.push_back(HandlerLimits{limit, milliseconds(1000), new_retry.back()});
      reindex.handlers.back().max_rate = random_rate();
      random_adaptive(reindex.handlers.back());
    }
    reindex.nak_delay = milliseconds(100);
    reindex.nak_delay_max = milliseconds(1000);
    auto remap = [&](HandlerMask mask) {
      HandlerMask out = 0;
      for (std::size_t h = 0; h < handler_count; ++h) {
        if ((mask & bit(h)) && reindex.old_to_new[h]) out |= bit(*reindex.old_to_new[h]);
      }
      return out;
    };
    for (auto& [seq, mask] : recipients) mask = remap(mask);
    for (auto& [seq, mask] : confirmed) mask = remap(mask);
    for (auto& [seq, keys] : order_keys) {
      std::map<std::size_t, std::string> moved;
      for (const auto& [h, key] : keys) {
        if (reindex.old_to_new[h]) moved[*reindex.old_to_new[h]] = key;
      }
      keys = std::move(moved);
    }
    // Which handlers are ordered may change; held messages keep the keys they had.
    ordered.assign(new_count, false);
    for (std::size_t h = 0; h < new_count; ++h) ordered[h] = pick(2) == 0;
    auto remap_key =
        [&](std::pair<std::uint64_t, std::size_t> key) -> std::optional<std::pair<std::uint64_t, std::size_t>> {
      if (!reindex.old_to_new[key.second]) return std::nullopt;
      return std::pair{key.first, *reindex.old_to_new[key.second]};
    };
    auto remap_set = [&](std::set<std::pair<std::uint64_t, std::size_t>>& keys) {
      std::set<std::pair<std::uint64_t, std::size_t>> out;
      for (const auto& key : keys) {
        if (auto moved = remap_key(key)) out.insert(*moved);
      }
      keys = std::move(out);
    };
    remap_set(given_up);
    remap_set(dead_letter_pending);
    remap_set(dead_letter_retrying);
    for (auto it = publishes.begin(); it != publishes.end();) {
      if (auto moved = remap_key(it->second)) {
        (it++)->second = *moved;
      } else {
        it = publishes.erase(it);  // the core drops a removed handler's dead letters
      }
    }
    for (auto& [seq, counts] : failed) {
      std::map<std::size_t, std::uint32_t> out;
      for (const auto& [h, count] : counts) {
        if (reindex.old_to_new[h]) out[*reindex.old_to_new[h]] = count;
      }
      counts = std::move(out);
    }
    for (auto& [connection, h] : handler_of) {
      if (connections.count(connection) && reindex.old_to_new[h]) h = *reindex.old_to_new[h];
    }
    retry = new_retry;
    paused.clear();  // the new table pauses nobody
    std::vector<ConnectionId> dropped;
    for (auto it = connections.begin(); it != connections.end();) {
      if (reindex.old_to_new[it->second]) {
        it->second = *reindex.old_to_new[it->second];
        ++it;
      } else {
        dropped.push_back(it->first);
        const ConnectionId gone = it->first;
        std::erase_if(in_flight, [&](const auto& f) { return f.first.first == gone; });
        it = connections.erase(it);
      }
    }
    handler_count = new_count;
    limits = new_limits;
    auto outcome = core.reconfigure(reindex, now);
    std::sort(outcome.dropped.begin(), outcome.dropped.end());
    REQUIRE(outcome.dropped == dropped);
  }

  void step() {
    const int action = static_cast<int>(pick(100));
    if (action < 20) {
      publish();
    } else if (action < 27) {
      connections[next_connection] = pick(handler_count);
      handler_of[next_connection] = connections[next_connection];
      core.connect(next_connection, connections[next_connection], now);
      ++next_connection;
    } else if (action < 31 && !connections.empty()) {
      const auto victim = std::next(connections.begin(), static_cast<long>(pick(connections.size())))->first;
      connections.erase(victim);
      std::erase_if(in_flight, [&](const auto& f) { return f.first.first == victim; });
      core.disconnect(victim, now);
    } else if (action < 70) {
      answer(false);
    } else if (action < 73) {
      answer_publish(false);
    } else if (action < 83) {
      const Duration step = milliseconds(pick(700));
      advance_to(now + step);
      if (action == 82) core.extend_deadlines(step);  // jetfan was not running meanwhile
      core.tick(now);
    } else if (action < 85) {
      reload();
    } else if (action < 86) {
      handing_back_for_room = true;
      core.hand_back_for_room(pick(handler_count), pick(4), now);
    } else if (action < 87) {
      const std::size_t h = pick(handler_count);
      const bool pause = paused.count(h) == 0;
      if (pause) {
        paused.insert(h);
      } else {
        paused.erase(h);
      }
      core.set_paused(h, pause, now);
    } else if (action < 88 && policy != AckPolicy::kNone && !stalled_until) {
      lose_in_transit();
    } else if (action < 89 && policy != AckPolicy::kNone && !stalled_until) {
      stalled_until = now + milliseconds(1 + pick(static_cast<std::size_t>(kAckWait.count())));
      ++stalls;
    } else if (action < 90) {
      // A pull request sent a while ago is answered (an idle heartbeat, or its end).
      const TimePoint asked_at = now - milliseconds(pick(1500));
      if (stalled_until) {
        pipe.emplace_back(asked_at);
      } else {
        core.heard(asked_at, now);
      }
      ++pulls_answered;
    } else if (policy == AckPolicy::kNone || stalled_until) {
      // The server forgets each message once sent: it never redelivers.
    } else if (action < 92 && !nak_pending.empty()) {
      const auto seq = *std::next(nak_pending.begin(), static_cast<long>(pick(nak_pending.size())));
      nak_pending.erase(seq);
      deliver_from_server(seq);
    } else if (action < 96 && !held_by_core.empty()) {
      // The server redelivers something the core still holds.
      deliver_from_server(*std::next(held_by_core.begin(), static_cast<long>(pick(held_by_core.size()))));
    } else if (!settled_at_server.empty()) {
      // The server lost an ack and delivers a settled message again.
      deliver_from_server(*std::next(settled_at_server.begin(), static_cast<long>(pick(settled_at_server.size()))));
    }
    apply();
    handing_back_for_room = false;
  }

  std::mt19937 random;
  AckPolicy policy;
  std::size_t handler_count;
  std::vector<std::uint32_t> limits;  // max_inflight per handler
  std::vector<bool> ordered;          // per handler: new messages get an order key for it
  std::vector<RetryPolicy> retry;     // made with the core's settings, so before it
  DispatchCore core;
  TimePoint now = kStart;
  bool draining = false;
  TimePoint handback_until{};
  std::map<MessageHandle, std::uint64_t> seq_of;
  std::set<MessageHandle> answered_copies, released;
  std::set<std::uint64_t> unroutable;
  std::map<std::uint64_t, HandlerMask> recipients, confirmed;
  std::map<std::uint64_t, std::uint64_t> deliveries;
  std::set<std::uint64_t> settled_at_server, ever_acked, ever_termed, nak_pending, held_by_core;
  std::set<std::uint64_t> poisoned;  // some handler, perhaps since removed, said TERM
  std::map<ConnectionId, std::size_t> connections;
  std::map<std::pair<ConnectionId, DeliveryId>, std::uint64_t> in_flight;
  ConnectionId next_connection = 1;
  std::uint64_t next_seq = 1;
  MessageHandle next_handle = 1;
  std::uint64_t failures = 0;
  std::map<std::uint64_t, std::map<std::size_t, std::string>> order_keys;  // seq -> handler -> key
  std::map<std::uint64_t, TimePoint> away_until;  // handed back while owed in order: its key waits
  std::map<std::uint64_t, MessageHandle> latest_copy;
  bool handing_back_for_room = false;
  // The retry policy: per handler, and what the model saw of each handler's budget per message.
  std::map<ConnectionId, std::size_t> handler_of;  // every connection there was, to its handler now
  std::map<std::uint64_t, std::map<std::size_t, std::uint32_t>> failed;
  using Key = std::pair<std::uint64_t, std::size_t>;  // (seq, handler)
  std::set<Key> must_give_up, termed_for_dead_letter, given_up, dead_letter_pending, dead_letter_retrying;
  std::map<std::uint64_t, Key> publishes;  // pending dead-letter publishes, by id
  std::uint64_t dead_letters_stored = 0;
  std::set<std::size_t> paused;
  static constexpr Duration kAckWait = milliseconds(2000);
  std::map<std::uint64_t, TimePoint> lost;  // lost on the way to jetfan: sent again then
  std::uint64_t consumer_seq = 0;           // the server's number of its last delivery
  std::map<std::uint64_t, std::uint64_t> published_ns;
  std::optional<TimePoint> stalled_until;  // nothing arrives until then
  // Sent meanwhile, in order: messages, and answers to pulls sent at a time.
  std::vector<std::variant<std::uint64_t, TimePoint>> pipe;
  std::uint64_t stalls = 0, pulls_answered = 0;
  std::uint64_t lost_while_ordered = 0;  // of those, ones an ordered handler was to get
  std::uint64_t lost_under_ack_all = 0;  // ... and ones lost under AckPolicy all
};

}  // namespace

TEST_CASE(
    "model: random traffic, reloads and messages lost on the way keep the checked rules of docs/dispatch-rules.md, "
    "and everything settles or is handed back",
    "[unit]") {
  const std::size_t kHandlers = 3;
  std::uint64_t dead_letters = 0;
  std::uint64_t lost_while_ordered = 0;
  std::uint64_t lost_under_ack_all = 0;
  std::uint64_t gaps = 0, stalls = 0, rate_held = 0, limits_cut = 0;
  for (unsigned seed = 1; seed <= 60; ++seed) {
    const AckPolicy policy = seed <= 40 ? AckPolicy::kExplicit : seed <= 52 ? AckPolicy::kAll : AckPolicy::kNone;
    const bool end_by_drain = seed % 3 == 0;
    INFO("seed " << seed << ", policy " << to_string(policy) << (end_by_drain ? ", ends by draining" : ""));
    Model m(seed, policy, kHandlers);
    for (int step = 0; step < 600; ++step) {
      m.step();
      if (step % 20 == 0) {
        for (const auto& load : m.core.loads()) rate_held += load.rate_waiting ? 1 : 0;
      }
    }

    if (end_by_drain) {
      m.draining = true;
      m.handback_until = m.now + milliseconds(m.pick(3000));
      m.core.begin_drain(m.now, std::chrono::ceil<Duration>(m.handback_until - m.now));
      m.apply();
      for (int step = 0; step < 100 && !m.in_flight.empty(); ++step) {
        m.now += milliseconds(m.pick(100));
        if (m.pick(4) == 0) m.publish();  // pulled before the drain began
        m.answer(false);
        m.apply();
      }
      m.core.abandon_all(m.now);
      m.apply();
      for (const auto& [id, key] : m.publishes) CHECK_FALSE(m.core.dead_letter_stored(id, m.now));
      CHECK(m.core.held() == 0);
      // Everything that arrived was settled, handed back, or released.
      for (const auto& [handle, seq] : m.seq_of) CHECK(m.released.count(handle));
      continue;
    }

    // Settle: one instance per handler, every answer good, redeliver until nothing is left.
    for (const std::size_t h : m.paused) m.core.set_paused(h, false, m.now);
    m.paused.clear();
    for (std::size_t h = 0; h < m.handler_count; ++h) {
      m.connections[m.next_connection] = h;
      m.handler_of[m.next_connection] = h;
      m.core.connect(m.next_connection++, h, m.now);
    }
    m.apply();
    for (int round = 0; round < 10000 && m.settled_at_server.size() < m.next_seq - 1; ++round) {
      if (!m.in_flight.empty()) {
        m.answer(true);
      } else if (!m.publishes.empty()) {
        m.answer_publish(true);
      } else if (!m.nak_pending.empty()) {
        const auto seq = *m.nak_pending.begin();
        m.nak_pending.erase(seq);
        m.deliver_from_server(seq);
      } else if (policy == AckPolicy::kNone && m.core.held() == 0) {
        break;  // the server forgets what it sent: nothing comes back
      } else {
        // Time passes: what was lost comes back, and retries inside the core fall due.
        m.advance_to(m.now + milliseconds(1000));
        m.core.tick(m.now);
      }
      m.apply();
    }
    if (policy != AckPolicy::kNone) CHECK(m.settled_at_server.size() == m.next_seq - 1);
    // Every failed delivery was reported, once.
    const auto& c = m.core.counters();
    CHECK(m.failures == c.failed_nak + c.failed_timeout + c.failed_disconnect);
    CHECK(m.core.held() == 0);
    for (const auto& [handle, seq] : m.seq_of) CHECK(m.released.count(handle));
    CHECK(m.core.counters().dead_lettered == m.dead_letters_stored);
    dead_letters += m.dead_letters_stored;
    lost_while_ordered += m.lost_while_ordered;
    lost_under_ack_all += m.lost_under_ack_all;
    gaps += m.core.counters().delivery_gaps;
    stalls += m.stalls;
    for (std::size_t h = 0; h < m.core.handler_count(); ++h) {
      for (const std::uint64_t cuts : m.core.handler_stats(h).inflight_cuts) limits_cut += cuts;
    }
  }
  CHECK(gaps > 0);                // the core saw the jumps
  CHECK(stalls > 0);              // and the runs stalled
  CHECK(rate_held > 0);           // and handlers waited for their max_rate
  CHECK(limits_cut > 0);          // and adaptive limits were cut
  CHECK(dead_letters > 0);        // the runs did exercise dead letters
  CHECK(lost_while_ordered > 0);  // and messages lost on the way to ordered handlers
  CHECK(lost_under_ack_all > 0);  // and under AckPolicy all
}

TEST_CASE("the deadline queue stays bounded by the deliveries in flight, however many pass", "[unit]") {
  DispatchCore core(settings(2));  // ack_timeout 1 s: every delivery below is confirmed long before
  core.connect(1, 0, kStart);
  core.connect(2, 1, kStart);
  std::size_t most = 0;
  for (std::uint64_t seq = 1; seq <= 100000; ++seq) {
    core.arrive(arrival(seq, 0b11), kStart);
    Taken sent(core);
    for (const auto& d : sent.of(Kind::kDeliver)) REQUIRE(core.ack(d.connection, d.delivery, kStart));
    if (seq % 3 == 0) {  // and a WIP now and then, which queues a second entry for its delivery
      core.arrive(arrival(seq + 1'000'000, 0b01), kStart);
      const auto held = Taken(core).of(Kind::kDeliver);
      REQUIRE(held.size() == 1);
      REQUIRE(core.wip(held[0].connection, held[0].delivery, kStart));
      REQUIRE(core.ack(held[0].connection, held[0].delivery, kStart));
    }
    core.effects().clear();
    most = std::max(most, core.deadlines_queued());
  }
  CHECK(core.held() == 0);
  CHECK(most <= 1024);  // without the rebuild: one entry per delivery and WIP, about 233,000
  // The queue still times out what is in flight, and only that.
  core.arrive(arrival(5'000'000, 0b11), kStart);
  core.effects().clear();
  core.tick(kStart + milliseconds(1001));
  CHECK(Taken(core).count(Kind::kNak) == 1);
  CHECK(core.counters().failed_timeout == 2);
}
