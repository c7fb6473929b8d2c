// PullDriver on its own: what it sends on a FakeUpstream, and when, as the ledger's decisions come
// in (pinned_client decoration and claims are tested through the Dispatcher, pinned_reader_test).

#include <catch2/catch.hpp>

#include "dispatcher_harness.hpp"
#include "fake_upstream.hpp"
#include "pull_driver.hpp"
#include "timekeeper.hpp"

using namespace jetfan;
using namespace jetfan::testing;

namespace {

struct Rig {
  Rig() {
    time.on_fired([this](Alarm alarm) { fired.push_back(alarm); });
  }

  TimePoint now() const { return time.now(); }
  // Fires the probe alarm if it is due by then, as the Dispatcher's on_alarm does.
  void advance(Duration by) {
    time.advance(by);
    for (Alarm alarm : fired) {
      if (alarm == Alarm::kProbe) driver.probe(time.now());
    }
    fired.clear();
  }

  Config config = testing::config({handler("a", {">"})});
  MessageBytesArena arena;
  FakeUpstream upstream{arena, "ev."};
  ManualTimekeeper time{TimePoint{} + std::chrono::hours(1)};
  ReaderHealth health{config, Duration(2000), false};
  PullSettings settings{
      .batch = 4, .max_held = 16, .max_held_bytes = 0, .expires = Duration(30000), .idle_heartbeat = Duration(5000)};
  PullDriver driver{settings, upstream, time, health};
  std::vector<Alarm> fired;
};

}  // namespace

TEST_CASE("pull driver: tops up to the ledger's requests, and none while the room is taken", "[pull_driver]") {
  Rig r;
  r.driver.top_up(0, 0);
  REQUIRE(!r.upstream.pulls.empty());
  CHECK(r.upstream.pulls.size() == r.driver.ledger().outstanding());
  std::size_t asked = 0;
  for (const auto& pull : r.upstream.pulls) asked += pull.batch;
  CHECK(asked <= 2 * r.settings.batch);
  r.upstream.pulls.clear();
  r.driver.top_up(0, 0);  // nothing used yet: nothing more to ask for
  CHECK(r.upstream.pulls.empty());
  r.driver.top_up(r.settings.max_held, 0);
  CHECK(r.upstream.pulls.empty());
}

TEST_CASE("pull driver: a pull that cannot be sent is not counted as open", "[pull_driver]") {
  Rig r;
  r.upstream.close(Duration(0));  // the fake refuses to send once closed
  r.driver.top_up(0, 0);
  CHECK(r.driver.ledger().outstanding() == 0);
  CHECK(r.driver.most_open() == 0);
}

TEST_CASE("pull driver: an unexpected status probes the consumer until it answers, then pulls anew", "[pull_driver]") {
  Rig r;
  r.driver.top_up(0, 0);
  REQUIRE(!r.upstream.pulls.empty());
  const std::uint64_t first = r.upstream.pulls.front().id;
  const auto heard = r.driver.on_status(PullStatus{first, "409", "Leadership Change"}, r.now());
  CHECK(heard.request_sent == r.now());
  CHECK(!heard.consumer_deleted);
  CHECK(r.upstream.probes.size() == 1);
  CHECK(r.driver.ledger().probing());
  r.advance(PullLedger::kProbeInterval);
  CHECK(r.upstream.probes.size() == 2);  // unanswered: asked again
  r.driver.on_probe_answer(false, r.now());
  CHECK(r.driver.ledger().probing());
  r.driver.top_up(0, 0);  // pulls go on meanwhile: the old leader may still be there
  REQUIRE(r.driver.ledger().outstanding() > 0);
  r.driver.on_probe_answer(true, r.now());
  CHECK(!r.driver.ledger().probing());
  // What was sent while the leader was unsure may have gone nowhere: dropped, and asked for anew.
  CHECK(r.driver.ledger().outstanding() == 0);
  r.upstream.pulls.clear();
  r.driver.top_up(0, 0);
  CHECK(!r.upstream.pulls.empty());
  r.advance(PullLedger::kProbeIntervalMax);
  CHECK(r.upstream.probes.size() == 2);  // answered: no more probes
}

TEST_CASE("pull driver: a heartbeat is no news, and a deleted consumer is said so", "[pull_driver]") {
  Rig r;
  r.driver.top_up(0, 0);
  const std::uint64_t first = r.upstream.pulls.front().id;
  const auto alive = r.driver.on_status(PullStatus{first, "100", "Idle Heartbeat"}, r.now());
  CHECK(!alive.consumer_deleted);
  CHECK(r.upstream.probes.empty());
  const auto deleted = r.driver.on_status(PullStatus{first, "409", "Consumer Deleted"}, r.now());
  CHECK(deleted.consumer_deleted);
  CHECK(r.upstream.probes.size() == 1);
}

TEST_CASE("pull driver: a reconnect drops every request and probes, and once stopped it neither pulls nor probes",
          "[pull_driver]") {
  Rig r;
  r.driver.top_up(0, 0);
  REQUIRE(r.driver.ledger().outstanding() > 0);
  r.driver.on_reconnected(r.now());
  CHECK(r.driver.ledger().outstanding() == 0);
  CHECK(r.upstream.probes.size() == 1);
  r.driver.stop();
  r.advance(PullLedger::kProbeIntervalMax);
  CHECK(r.upstream.probes.size() == 1);
  r.driver.on_probe_answer(true, r.now());
  r.upstream.pulls.clear();
  r.driver.top_up(0, 0);
  CHECK(r.upstream.pulls.empty());
}

TEST_CASE("pull driver: silence for three heartbeats drops the requests and probes", "[pull_driver]") {
  Rig r;
  r.driver.top_up(0, 0);
  REQUIRE(r.driver.ledger().outstanding() > 0);
  r.advance(r.settings.idle_heartbeat * PullLedger::kMissedHeartbeats + Duration(1000));
  r.driver.check_liveness(r.now());
  CHECK(r.driver.ledger().outstanding() == 0);
  CHECK(r.upstream.probes.size() == 1);
}

TEST_CASE("pull driver: the most requests open since the last answer outlive the requests themselves",
          "[pull_driver]") {
  Rig r;
  r.driver.top_up(0, 0);
  const std::uint64_t open = r.driver.ledger().outstanding();
  REQUIRE(open > 0);
  for (const auto& pull : r.upstream.pulls) r.driver.on_status(PullStatus{pull.id, "408", "Request Timeout"}, r.now());
  CHECK(r.driver.ledger().outstanding() == 0);
  CHECK(r.driver.most_open() == open);  // the server may have counted them before they ended
  r.driver.answered();
  CHECK(r.driver.most_open() == 0);
}
