#include <catch2/catch.hpp>

#include "core_test_support.hpp"
#include "dispatch_core.hpp"

using namespace jetfan;
using Kind = Effect::Kind;
using std::chrono::milliseconds;

namespace {

const TimePoint kStart{};

CoreSettings settings(std::size_t handlers) { return testing::core_settings(handlers); }

std::vector<Effect> take(DispatchCore& core, Kind kind) { return testing::effects_of(core.effects(), kind); }

std::vector<Effect> drain(DispatchCore& core) { return testing::take_effects(core); }

std::size_t count(const std::vector<Effect>& effects, Kind kind) {
  return static_cast<std::size_t>(
      std::count_if(effects.begin(), effects.end(), [&](const Effect& e) { return e.kind == kind; }));
}

HandlerReindex reindex(std::vector<std::optional<std::size_t>> old_to_new, std::size_t handlers) {
  return HandlerReindex{std::move(old_to_new),
                        std::vector<HandlerLimits>(handlers, HandlerLimits{4, milliseconds(1000)}), milliseconds(100),
                        milliseconds(1000)};
}

}  // namespace

TEST_CASE("per-handler figures: deliveries, confirmations by kind, latency, load", "[unit]") {
  DispatchCore core(settings(2));
  core.connect(1, 0, kStart);
  for (std::uint64_t seq = 1; seq <= 6; ++seq) core.arrive(Arrival{seq, seq, 1, 0b11}, kStart);
  auto sent = take(core, Kind::kDeliver);
  drain(core);
  REQUIRE(sent.size() == 4);  // max_inflight 4; handler 1 has no instance
  core.ack(1, sent[0].delivery, kStart + milliseconds(3));
  core.term(1, sent[1].delivery, kStart + milliseconds(20));
  core.nak(1, sent[2].delivery, std::nullopt, kStart + milliseconds(2000));
  core.tick(kStart + milliseconds(5000));  // sent[3] and the two that followed time out
  const HandlerStats& stats = core.handler_stats(0);
  CHECK(stats.delivered == 6);
  CHECK(stats.acked == 1);
  CHECK(stats.termed == 1);
  CHECK(stats.failed_nak == 1);
  CHECK(stats.failed_timeout == 3);
  CHECK(stats.confirmation_latency.count() == 3);     // ACK, TERM and NAK; not the timeouts
  CHECK(stats.confirmation_latency.bucket(5) == 1);   // 3ms: (2.5ms, 5ms]
  CHECK(stats.confirmation_latency.bucket(7) == 1);   // 20ms: (10ms, 25ms]
  CHECK(stats.confirmation_latency.bucket(13) == 1);  // 2s: (1s, 2.5s]
  CHECK(core.handler_stats(1).delivered == 0);
  const auto loads = core.loads();
  CHECK(loads[0].connections == 1);
  CHECK(loads[0].in_flight == 0);
  // The four handler 0 failed went back to the server at once (handler 1 has no instance to wait
  // for); handler 1 still owes the ACKed one and the TERMed one.
  CHECK(loads[1].queued == 2);
  CHECK(loads[1].owed == 2);
  CHECK(loads[1].oldest_unconfirmed == kStart);
  core.disconnect(1, kStart);
  CHECK(core.oldest_held() == kStart);
}

TEST_CASE("reload: a removed handler's held messages settle as if it had confirmed", "[unit]") {
  DispatchCore core(settings(2));
  core.connect(1, 0, kStart);
  core.connect(2, 1, kStart);
  core.arrive(Arrival{101, 1, 1, 0b11}, kStart);  // both in flight
  core.arrive(Arrival{201, 2, 1, 0b10}, kStart);  // for handler 1 only
  auto sent = take(core, Kind::kDeliver);
  drain(core);
  const auto to_zero = sent[0].connection == 1 ? sent[0] : sent[1];
  core.ack(1, to_zero.delivery, kStart);
  CHECK(count(drain(core), Kind::kAck) == 0);  // handler 1 still owes it
  // Handler 1 goes; handler 0 stays at index 0.
  const auto outcome = core.reconfigure(reindex({0, std::nullopt}, 1), kStart);
  CHECK(outcome.dropped == std::vector<ConnectionId>{2});
  CHECK(outcome.released == std::vector<std::size_t>{0, 2});
  const auto after = drain(core);
  CHECK(count(after, Kind::kAck) == 2);
  CHECK(count(after, Kind::kNak) == 0);
  CHECK(core.held() == 0);
  core.disconnect(2, kStart);  // the caller closes it; nothing is failed
  CHECK(drain(core).empty());
  CHECK(core.counters().failed_disconnect == 0);
}

TEST_CASE("reload: a held message waits for the recipients that remain, which keep their confirmations", "[unit]") {
  DispatchCore core(settings(3));
  core.connect(1, 0, kStart);
  core.connect(3, 2, kStart);
  core.arrive(Arrival{101, 1, 1, 0b111}, kStart);  // handler 1 has no instance
  auto sent = take(core, Kind::kDeliver);
  drain(core);
  const auto to_two = sent[0].connection == 3 ? sent[0] : sent[1];
  const auto to_zero = sent[0].connection == 1 ? sent[0] : sent[1];
  core.ack(3, to_two.delivery, kStart);
  drain(core);
  // Reorder: 2 -> 0, 0 -> 2, 1 -> 1, and add handler 3.
  core.reconfigure(reindex({2, 1, 0}, 4), kStart);
  CHECK(drain(core).empty());
  core.connect(4, 3, kStart);  // the added handler: not a recipient of what was held
  CHECK(drain(core).empty());
  core.connect(5, 1, kStart);  // handler 1, still owed, gets it now
  auto late = take(core, Kind::kDeliver);
  drain(core);
  REQUIRE(late.size() == 1);
  CHECK(late[0].connection == 5);
  core.ack(5, late[0].delivery, kStart);
  CHECK(count(drain(core), Kind::kAck) == 0);  // handler 0, now index 2, still has it in flight
  core.ack(1, to_zero.delivery, kStart);
  CHECK(count(drain(core), Kind::kAck) == 1);
  CHECK(core.handler_stats(0).acked == 1);  // figures moved with the handler
  CHECK(core.handler_stats(3).delivered == 0);
}

TEST_CASE("reload: a TERM from a removed handler still terminates, also after a redelivery", "[unit]") {
  DispatchCore core(settings(2));
  core.connect(1, 0, kStart);
  core.connect(2, 1, kStart);
  core.arrive(Arrival{101, 1, 1, 0b11}, kStart);
  auto sent = take(core, Kind::kDeliver);
  drain(core);
  const auto to_zero = sent[0].connection == 1 ? sent[0] : sent[1];
  const auto to_one = sent[0].connection == 2 ? sent[0] : sent[1];
  core.term(2, to_one.delivery, kStart);
  core.nak(1, to_zero.delivery, std::nullopt, kStart);
  CHECK(count(drain(core), Kind::kNak) == 1);
  core.reconfigure(reindex({0, std::nullopt}, 1), kStart);
  drain(core);
  core.arrive(Arrival{102, 1, 2, 0b1}, kStart);
  auto again = take(core, Kind::kDeliver);
  drain(core);
  REQUIRE(again.size() == 1);
  core.ack(1, again[0].delivery, kStart);
  const auto done = drain(core);
  CHECK(count(done, Kind::kTerm) == 1);
  CHECK(count(done, Kind::kAck) == 0);
}

TEST_CASE("reload: a larger max_inflight dispatches at once, a smaller one holds back new deliveries", "[unit]") {
  DispatchCore core(settings(1));
  core.connect(1, 0, kStart);
  for (std::uint64_t seq = 1; seq <= 8; ++seq) core.arrive(Arrival{seq, seq, 1, 0b1}, kStart);
  auto sent = take(core, Kind::kDeliver);
  drain(core);
  CHECK(sent.size() == 4);
  auto more = reindex({0}, 1);
  more.handlers[0].max_inflight = 6;
  core.reconfigure(more, kStart);
  auto extra = take(core, Kind::kDeliver);
  drain(core);
  CHECK(extra.size() == 2);
  auto fewer = reindex({0}, 1);
  fewer.handlers[0].max_inflight = 2;
  core.reconfigure(fewer, kStart);
  CHECK(drain(core).empty());
  for (int i = 0; i < 4; ++i) core.ack(1, sent[static_cast<std::size_t>(i)].delivery, kStart);
  CHECK(take(core, Kind::kDeliver).empty());  // still 2 in flight: no room under the new limit
  drain(core);
  core.ack(1, extra[0].delivery, kStart);
  CHECK(take(core, Kind::kDeliver).size() == 1);
}
