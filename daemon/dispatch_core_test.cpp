#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <set>

#include "dispatch_core.hpp"

using namespace jetfan;
using Kind = Effect::Kind;
using std::chrono::milliseconds;

namespace {

const TimePoint kStart{};

CoreSettings settings(std::size_t handlers, AckPolicy policy = AckPolicy::kExplicit) {
  CoreSettings s;
  s.handlers.assign(handlers, HandlerLimits{4, milliseconds(1000)});
  s.ack_policy = policy;
  s.nak_delay = milliseconds(100);
  s.nak_delay_max = milliseconds(1000);
  s.keepalive = milliseconds(500);
  return s;
}

// Takes the core's effects and makes them easy to assert on.
struct Drain {
  std::vector<Effect> all;
  explicit Drain(DispatchCore& core) : all(std::move(core.effects())) { core.effects().clear(); }
  std::vector<Effect> of(Kind kind) const {
    std::vector<Effect> out;
    for (const auto& e : all) {
      if (e.kind == kind) out.push_back(e);
    }
    return out;
  }
  std::size_t count(Kind kind) const { return of(kind).size(); }
};

Arrival arrival(std::uint64_t seq, HandlerMask recipients, std::uint64_t deliveries = 1) {
  return Arrival{seq * 100 + deliveries, seq, deliveries, recipients};
}

}  // namespace

TEST_CASE("a message is acked only once every recipient has acked") {
  DispatchCore core(settings(2));
  core.connect(1, 0, kStart);
  core.connect(2, 1, kStart);
  core.arrive(arrival(7, 0b11), kStart);
  Drain sent(core);
  REQUIRE(sent.count(Kind::kDeliver) == 2);
  const auto to_first = sent.of(Kind::kDeliver)[0];
  const auto to_second = sent.of(Kind::kDeliver)[1];
  CHECK(core.ack(to_first.connection, to_first.delivery, kStart));
  CHECK(Drain(core).count(Kind::kAck) == 0);
  CHECK(core.ack(to_second.connection, to_second.delivery, kStart));
  Drain done(core);
  REQUIRE(done.count(Kind::kAck) == 1);
  CHECK(done.of(Kind::kAck)[0].message == 701);
  CHECK(done.count(Kind::kRelease) == 1);
  CHECK(core.held() == 0);
}

TEST_CASE("a message nobody declared is acked at once and counted") {
  DispatchCore core(settings(2));
  core.arrive(arrival(1, 0), kStart);
  Drain d(core);
  CHECK(d.count(Kind::kAck) == 1);
  CHECK(core.counters().no_recipient == 1);
}

TEST_CASE("a recipient with no instance holds its messages until one connects") {
  DispatchCore core(settings(1));
  core.arrive(arrival(1, 0b1), kStart);
  core.arrive(arrival(2, 0b1), kStart);
  CHECK(Drain(core).all.empty());
  CHECK(core.held() == 2);
  core.tick(kStart + milliseconds(10'000));  // held is not failed, whatever the time
  Drain kept(core);
  CHECK(kept.count(Kind::kNak) == 0);
  CHECK(kept.count(Kind::kWip) == 2);  // and it is kept alive at the server
  core.connect(5, 0, kStart + milliseconds(10'000));
  Drain d(core);
  REQUIRE(d.count(Kind::kDeliver) == 2);
  CHECK(d.of(Kind::kDeliver)[0].message == 101);  // in stream order
  CHECK(d.of(Kind::kDeliver)[1].message == 201);
}

TEST_CASE("instances of one handler share its messages, least loaded first, within max_inflight") {
  DispatchCore core(settings(1));
  core.connect(1, 0, kStart);
  core.connect(2, 0, kStart);
  for (std::uint64_t seq = 1; seq <= 10; ++seq) core.arrive(arrival(seq, 0b1), kStart);
  Drain d(core);
  std::map<ConnectionId, int> per_connection;
  for (const auto& e : d.of(Kind::kDeliver)) ++per_connection[e.connection];
  CHECK(per_connection[1] == 4);  // max_inflight 4 each
  CHECK(per_connection[2] == 4);
  CHECK(core.held() == 10);
  const auto first = d.of(Kind::kDeliver)[0];
  core.ack(first.connection, first.delivery, kStart);
  Drain more(core);
  REQUIRE(more.count(Kind::kDeliver) == 1);
  CHECK(more.of(Kind::kDeliver)[0].connection == first.connection);
}

TEST_CASE("a NAK fails the delivery; the nak waits for the other recipients, then goes with a growing delay") {
  DispatchCore core(settings(2));
  core.connect(1, 0, kStart);
  core.connect(2, 1, kStart);
  core.arrive(arrival(3, 0b11, 3), kStart);
  Drain sent(core);
  const auto a = sent.of(Kind::kDeliver)[0];
  const auto b = sent.of(Kind::kDeliver)[1];
  core.nak(a.connection, a.delivery, std::nullopt, kStart);
  CHECK(Drain(core).count(Kind::kNak) == 0);  // b still has it
  core.ack(b.connection, b.delivery, kStart);
  Drain d(core);
  REQUIRE(d.count(Kind::kNak) == 1);
  CHECK(d.of(Kind::kNak)[0].delay == milliseconds(400));  // 100ms doubled per earlier delivery
  CHECK(d.count(Kind::kAck) == 0);

  // Redelivered: only the recipient that still owes it receives it.
  core.arrive(arrival(3, 0b11, 4), kStart);
  Drain again(core);
  REQUIRE(again.count(Kind::kDeliver) == 1);
  CHECK(again.of(Kind::kDeliver)[0].connection == a.connection);
  core.ack(a.connection, again.of(Kind::kDeliver)[0].delivery, kStart);
  CHECK(Drain(core).count(Kind::kAck) == 1);
}

TEST_CASE("the nak delay is capped, and a handler's own delay is honoured") {
  DispatchCore core(settings(1));
  core.connect(1, 0, kStart);
  core.arrive(arrival(1, 0b1, 20), kStart);
  auto d = Drain(core).of(Kind::kDeliver)[0];
  core.nak(d.connection, d.delivery, std::nullopt, kStart);
  CHECK(Drain(core).of(Kind::kNak)[0].delay == milliseconds(1000));
  core.arrive(arrival(2, 0b1, 20), kStart);
  d = Drain(core).of(Kind::kDeliver)[0];
  core.nak(d.connection, d.delivery, milliseconds(5), kStart);
  CHECK(Drain(core).of(Kind::kNak)[0].delay == milliseconds(5));
}

TEST_CASE("no confirmation within ack_timeout fails the delivery; WIP extends it") {
  DispatchCore core(settings(1));
  core.connect(1, 0, kStart);
  core.arrive(arrival(1, 0b1), kStart);
  core.arrive(arrival(2, 0b1), kStart);
  Drain sent(core);
  const auto first = sent.of(Kind::kDeliver)[0];
  REQUIRE(core.next_wakeup() == kStart + milliseconds(500));  // the keepalive comes first
  core.wip(first.connection, first.delivery, kStart + milliseconds(900));
  core.tick(kStart + milliseconds(1000));
  Drain d(core);
  REQUIRE(d.count(Kind::kNak) == 1);
  CHECK(d.of(Kind::kNak)[0].message == 201);
  CHECK(core.counters().failed_timeout == 1);
  core.tick(kStart + milliseconds(1900));
  CHECK(Drain(core).of(Kind::kNak)[0].message == 101);
  CHECK_FALSE(core.ack(first.connection, first.delivery, kStart));  // too late
  CHECK(core.counters().unknown_confirmations == 1);
}

TEST_CASE("a disconnect fails what was in flight on that connection only") {
  DispatchCore core(settings(1));
  core.connect(1, 0, kStart);
  core.connect(2, 0, kStart);
  core.arrive(arrival(1, 0b1), kStart);
  core.arrive(arrival(2, 0b1), kStart);
  Drain sent(core);
  const auto on_one = sent.of(Kind::kDeliver)[0].connection == 1 ? sent.of(Kind::kDeliver)[0] : sent.of(Kind::kDeliver)[1];
  core.disconnect(1, kStart);
  Drain d(core);
  REQUIRE(d.count(Kind::kNak) == 1);
  CHECK(d.of(Kind::kNak)[0].message == on_one.message);
  CHECK(core.held() == 1);
}

TEST_CASE("TERM from every recipient terminates; TERM and ACK terminates; TERM and NAK naks") {
  DispatchCore core(settings(2));
  core.connect(1, 0, kStart);
  core.connect(2, 1, kStart);
  core.arrive(arrival(1, 0b11), kStart);
  core.arrive(arrival(2, 0b11), kStart);
  Drain sent(core);
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
  Drain one(core);
  CHECK(one.count(Kind::kTerm) == 1);
  CHECK(one.count(Kind::kAck) == 0);
  core.term(1, find(201, 1), kStart);
  core.nak(2, find(201, 2), std::nullopt, kStart);
  Drain two(core);
  CHECK(two.count(Kind::kNak) == 1);
  core.arrive(arrival(2, 0b11, 2), kStart);
  Drain again(core);
  REQUIRE(again.count(Kind::kDeliver) == 1);  // the one that TERMed does not get it back
  CHECK(again.of(Kind::kDeliver)[0].connection == 2);
  core.ack(2, again.of(Kind::kDeliver)[0].delivery, kStart);
  CHECK(Drain(core).count(Kind::kTerm) == 1);  // still terminated: one recipient called it poison
}

TEST_CASE("a redelivery of a message still held changes nothing but the copy answered on") {
  DispatchCore core(settings(1));
  core.connect(1, 0, kStart);
  core.arrive(arrival(1, 0b1, 1), kStart);
  const auto sent = Drain(core).of(Kind::kDeliver)[0];
  core.arrive(arrival(1, 0b1, 2), kStart);
  Drain dup(core);
  CHECK(dup.count(Kind::kDeliver) == 0);
  CHECK(dup.of(Kind::kRelease)[0].message == 101);
  core.ack(1, sent.delivery, kStart);
  CHECK(Drain(core).of(Kind::kAck)[0].message == 102);
}

TEST_CASE("AckPolicy all acks only the highest sequence below which everything is settled") {
  DispatchCore core(settings(1, AckPolicy::kAll));
  core.connect(1, 0, kStart);
  for (std::uint64_t seq = 1; seq <= 3; ++seq) core.arrive(arrival(seq, 0b1), kStart);
  auto sent = Drain(core).of(Kind::kDeliver);
  core.ack(1, sent[1].delivery, kStart);
  core.ack(1, sent[2].delivery, kStart);
  CHECK(Drain(core).count(Kind::kAck) == 0);  // 1 is still held: acking 3 would ack it too
  core.ack(1, sent[0].delivery, kStart);
  Drain d(core);
  REQUIRE(d.count(Kind::kAck) == 1);
  CHECK(d.of(Kind::kAck)[0].message == 301);
  CHECK(d.count(Kind::kRelease) == 3);
  CHECK(core.held() == 0);
}

TEST_CASE("AckPolicy all: a nak'd message holds the floor until it comes back, unless MaxDeliver is reached") {
  auto s = settings(1, AckPolicy::kAll);
  s.max_deliver = 2;
  DispatchCore core(s);
  core.connect(1, 0, kStart);
  core.arrive(arrival(1, 0b1), kStart);
  core.arrive(arrival(2, 0b1), kStart);
  auto sent = Drain(core).of(Kind::kDeliver);
  core.nak(1, sent[0].delivery, std::nullopt, kStart);
  core.ack(1, sent[1].delivery, kStart);
  CHECK(Drain(core).count(Kind::kAck) == 0);
  core.arrive(arrival(1, 0b1, 2), kStart);
  const auto again = Drain(core).of(Kind::kDeliver)[0];
  core.nak(1, again.delivery, std::nullopt, kStart);  // its last delivery
  Drain d(core);
  REQUIRE(d.count(Kind::kAck) == 1);
  CHECK(d.of(Kind::kAck)[0].message == 201);
}

TEST_CASE("AckPolicy none sends nothing to the server") {
  DispatchCore core(settings(1, AckPolicy::kNone));
  core.connect(1, 0, kStart);
  core.arrive(arrival(1, 0b1), kStart);
  core.arrive(arrival(2, 0), kStart);
  const auto sent = Drain(core).of(Kind::kDeliver)[0];
  core.nak(1, sent.delivery, std::nullopt, kStart);
  core.tick(kStart + milliseconds(10'000));
  Drain d(core);
  CHECK(d.count(Kind::kAck) + d.count(Kind::kNak) + d.count(Kind::kTerm) + d.count(Kind::kWip) == 0);
  CHECK(core.held() == 0);
}

TEST_CASE("draining naks at once what is not in flight, waits for what is, then abandons the rest") {
  DispatchCore core(settings(2));
  core.connect(1, 0, kStart);
  core.arrive(arrival(1, 0b01), kStart);  // in flight
  core.arrive(arrival(2, 0b10), kStart);  // held: handler 1 has no instance
  core.arrive(arrival(3, 0b01), kStart);  // in flight
  auto sent = Drain(core).of(Kind::kDeliver);
  core.begin_drain(kStart);
  Drain first(core);
  REQUIRE(first.count(Kind::kNak) == 1);
  CHECK(first.of(Kind::kNak)[0].message == 201);
  CHECK(first.of(Kind::kNak)[0].delay == milliseconds(0));
  core.ack(1, sent[0].delivery, kStart);
  CHECK(Drain(core).count(Kind::kAck) == 1);
  core.arrive(arrival(4, 0b01), kStart);  // pulled before the drain began
  Drain late(core);
  CHECK(late.count(Kind::kDeliver) == 0);
  CHECK(late.count(Kind::kNak) == 1);
  core.abandon_all(kStart);
  Drain rest(core);
  REQUIRE(rest.count(Kind::kNak) == 1);
  CHECK(rest.of(Kind::kNak)[0].message == 301);
  CHECK(rest.of(Kind::kNak)[0].delay == milliseconds(0));
  CHECK(core.held() == 0);
}

TEST_CASE("memory of confirmations is bounded") {
  auto s = settings(2);
  s.remember = 3;
  DispatchCore core(s);
  core.connect(1, 0, kStart);
  core.connect(2, 1, kStart);
  for (std::uint64_t seq = 1; seq <= 5; ++seq) {
    core.arrive(arrival(seq, 0b11), kStart);
    auto sent = Drain(core).of(Kind::kDeliver);
    core.ack(sent[0].connection, sent[0].delivery, kStart);
    core.nak(sent[1].connection, sent[1].delivery, std::nullopt, kStart);
  }
  // 1 and 2 were forgotten: redelivered, they go to both recipients again (at least once).
  core.arrive(arrival(1, 0b11, 2), kStart);
  CHECK(Drain(core).count(Kind::kDeliver) == 2);
  core.arrive(arrival(5, 0b11, 2), kStart);
  CHECK(Drain(core).count(Kind::kDeliver) == 1);
}

// The randomized model test. A model server publishes, redelivers what was nak'd, and sometimes
// redelivers what is still held; model handlers connect, disconnect and answer at random. The
// invariants are checked on every effect; at the end everything must settle.
TEST_CASE("model: random traffic keeps the invariants and everything settles") {
  const std::size_t kHandlers = 3;
  for (unsigned seed = 1; seed <= 40; ++seed) {
    INFO("seed " << seed);
    std::mt19937 random(seed);
    auto pick = [&](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(random); };

    DispatchCore core(settings(kHandlers));
    TimePoint now = kStart;
    std::map<MessageHandle, std::uint64_t> seq_of;                // handle -> seq
    std::map<std::uint64_t, HandlerMask> recipients;              // seq -> recipients
    std::map<std::uint64_t, HandlerMask> confirmed;               // seq -> handlers that ACKed or TERMed
    std::map<std::uint64_t, std::uint64_t> deliveries;            // seq -> server delivery count
    std::set<std::uint64_t> settled_at_server, nak_pending, held_by_core;
    std::map<ConnectionId, std::size_t> connections;              // live connection -> handler
    std::map<std::pair<ConnectionId, DeliveryId>, std::uint64_t> in_flight;
    ConnectionId next_connection = 1;
    std::uint64_t next_seq = 1;
    MessageHandle next_handle = 1;

    auto deliver_from_server = [&](std::uint64_t seq) {
      const MessageHandle handle = next_handle++;
      seq_of[handle] = seq;
      held_by_core.insert(seq);
      core.arrive(Arrival{handle, seq, ++deliveries[seq], recipients[seq]}, now);
    };
    auto apply = [&]() {
      auto effects = std::move(core.effects());
      core.effects().clear();
      for (const auto& e : effects) {
        const std::uint64_t seq = seq_of.at(e.message);
        switch (e.kind) {
          case Kind::kDeliver: {
            REQUIRE(connections.count(e.connection));
            const std::size_t h = connections[e.connection];
            REQUIRE((recipients[seq] >> h & 1));
            // Never send a recipient what it already confirmed.
            REQUIRE_FALSE((confirmed[seq] >> h & 1));
            in_flight[{e.connection, e.delivery}] = seq;
            break;
          }
          case Kind::kAck:
          case Kind::kTerm:
            // Never settle before every recipient confirmed; never settle twice.
            REQUIRE((confirmed[seq] & recipients[seq]) == recipients[seq]);
            REQUIRE(settled_at_server.insert(seq).second);
            held_by_core.erase(seq);
            break;
          case Kind::kNak:
            REQUIRE_FALSE(settled_at_server.count(seq));
            REQUIRE((confirmed[seq] & recipients[seq]) != recipients[seq]);
            held_by_core.erase(seq);
            nak_pending.insert(seq);
            break;
          case Kind::kWip:
          case Kind::kRelease: break;
        }
      }
    };
    auto answer = [&](bool only_good) {
      if (in_flight.empty()) return;
      auto it = std::next(in_flight.begin(), static_cast<long>(pick(in_flight.size())));
      const auto [key, seq] = *it;
      const auto [connection, delivery] = key;
      const std::size_t h = connections.at(connection);
      const int roll = only_good ? 0 : static_cast<int>(pick(100));
      in_flight.erase(it);
      if (roll < 60) {
        confirmed[seq] |= HandlerMask{1} << h;
        REQUIRE(core.ack(connection, delivery, now));
      } else if (roll < 70) {
        confirmed[seq] |= HandlerMask{1} << h;
        REQUIRE(core.term(connection, delivery, now));
      } else if (roll < 90) {
        REQUIRE(core.nak(connection, delivery, std::nullopt, now));
      } else {
        REQUIRE(core.wip(connection, delivery, now));
        in_flight[key] = seq;
      }
    };

    for (int step = 0; step < 600; ++step) {
      const int action = static_cast<int>(pick(100));
      if (action < 20) {
        const std::uint64_t seq = next_seq++;
        recipients[seq] = static_cast<HandlerMask>(pick(1u << kHandlers));
        deliver_from_server(seq);
      } else if (action < 27) {
        connections[next_connection] = pick(kHandlers);
        core.connect(next_connection, connections[next_connection], now);
        ++next_connection;
      } else if (action < 31 && !connections.empty()) {
        const auto victim = std::next(connections.begin(), static_cast<long>(pick(connections.size())))->first;
        connections.erase(victim);
        std::erase_if(in_flight, [&](const auto& f) { return f.first.first == victim; });
        core.disconnect(victim, now);
      } else if (action < 75) {
        answer(false);
      } else if (action < 85) {
        now += milliseconds(pick(700));
        // The core forgets deliveries that timed out; so does the model.
        core.tick(now);
      } else if (action < 95 && !nak_pending.empty()) {
        const auto seq = *std::next(nak_pending.begin(), static_cast<long>(pick(nak_pending.size())));
        nak_pending.erase(seq);
        deliver_from_server(seq);
      } else if (!held_by_core.empty()) {
        // The server redelivers something the core still holds.
        deliver_from_server(*std::next(held_by_core.begin(), static_cast<long>(pick(held_by_core.size()))));
      }
      apply();
      // Drop model flights the core timed out (it no longer knows them).
      std::erase_if(in_flight, [&](const auto& f) { return !core.is_in_flight(f.first.first, f.first.second); });
    }

    // Settle: one instance per handler, every answer good, redeliver until nothing is left.
    for (std::size_t h = 0; h < kHandlers; ++h) {
      connections[next_connection] = h;
      core.connect(next_connection++, h, now);
    }
    apply();
    for (int round = 0; round < 10000 && settled_at_server.size() < next_seq - 1; ++round) {
      if (!in_flight.empty()) {
        answer(true);
      } else if (!nak_pending.empty()) {
        const auto seq = *nak_pending.begin();
        nak_pending.erase(seq);
        deliver_from_server(seq);
      } else {
        now += milliseconds(1000);
        core.tick(now);
      }
      apply();
    }
    CHECK(settled_at_server.size() == next_seq - 1);
    CHECK(core.held() == 0);
  }
}
