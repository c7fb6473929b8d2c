// PinnedReader through the real Dispatcher: a pinned_client reader stands by until a delivery
// carries its pin id, then takes over (the host's restart hold) and names the id in its pulls; a
// refused id (423) makes it stand by and hand back what it holds, unless the request carried an id
// already replaced; keep-alive pulls keep a pin while jetfan asks for nothing else; step-down
// releases the pin, stands by, declines a pin given to its old requests, and pulls again later.

#include <catch2/catch.hpp>

#include "dispatcher_harness.hpp"

using namespace jetfan;
using namespace jetfan::testing;

namespace {

const PinSettings kPin{"jobs", milliseconds(3000)};

void deliver_pinned(Harness& h, std::uint64_t seq, const std::string& pin_id) {
  h.upstream.deliver(FakeUpstream::Message{seq, "ev.a." + std::to_string(seq), "payload",
                                           "NATS/1.0\r\nNats-Pin-Id: " + pin_id + "\r\n\r\n", 1, 0});
  h.pump();
}

// The ledger's pulls sent so far (keep-alives aside).
std::vector<std::size_t> ledger_pulls(const Harness& h) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < h.upstream.pulls.size(); ++i) {
    if (!PinnedReader::owns_pull(h.upstream.pulls[i].id)) out.push_back(i);
  }
  return out;
}

// A jetfan that may hold two messages, batch 2.
Config holding_two() {
  Config c = config({handler("builder", {"a.>"})});
  c.consumer.batch = 2;
  c.consumer.max_held = 2;
  return c;
}

// Pinned with PIN-1 by two deliveries that `peer` leaves unconfirmed: a holding_two() jetfan is full.
void pin_and_fill(Harness& h, std::size_t peer) {
  deliver_pinned(h, 1, "PIN-1");
  deliver_pinned(h, 2, "PIN-1");
  REQUIRE(h.msgs(peer).size() == 2);
}

}  // namespace

TEST_CASE("a pinned_client reader stands by until a delivery carries its pin id, then serves", "[unit]") {
  Harness h(config({handler("builder", {"a.>"})}), kPin);
  const auto peer = h.hello("builder");
  REQUIRE(!h.upstream.pulls.empty());
  CHECK(h.upstream.pull_pins.front().group == "jobs");
  CHECK(h.upstream.pull_pins.front().pin_id.empty());
  CHECK(h.status().pin_role == "standby");
  CHECK(h.take_overs == 0);

  deliver_pinned(h, 1, "PIN-1");
  CHECK(h.take_overs == 1);
  CHECK(h.status().pin_role == "active");
  CHECK(h.status().pin_gained == 1);
  const auto msgs = h.msgs(peer);
  REQUIRE(msgs.size() == 1);
  h.send(peer, "ACK " + std::to_string(msgs[0].id) + "\r\n");
  CHECK(h.replied(Kind::kAck) == std::vector<std::uint64_t>{1});
  // The pulls that follow name the pin.
  h.upstream.pulls.clear();
  h.upstream.pull_pins.clear();
  for (std::uint64_t seq = 2; seq <= 8; ++seq) deliver_pinned(h, seq, "PIN-1");
  REQUIRE(!h.upstream.pull_pins.empty());
  CHECK(h.upstream.pull_pins.back().pin_id == "PIN-1");
  CHECK(h.take_overs == 1);
  CHECK(h.broken.empty());
}

// The consumer's answer to a pin check: group "jobs" pinned to `holder` (empty: to no one).
static std::string info_pinned_to(const std::string& holder) {
  return R"({"stream_name":"STREAM","name":"CONSUMER","config":{"durable_name":"CONSUMER","ack_policy":"explicit",)"
         R"("priority_policy":"pinned_client","priority_groups":["jobs"]},"priority_groups":[{"group":"jobs")" +
         (holder.empty() ? std::string() : R"(,"pinned_client_id":")" + holder + "\"") + "}]}";
}

// The pin check sent after a 423, answered with `json`.
static void answer_pin_check(Harness& h, const std::string& json) {
  REQUIRE(!h.upstream.consumer_info_requests.empty());
  const auto& check = h.upstream.consumer_info_requests.back();
  REQUIRE(PinnedReader::owns_request(check.id));
  CHECK(check.subject == "$JS.API.CONSUMER.INFO.STREAM.CONSUMER");
  h.upstream.api_answer(check.id, json);
  h.pump();
}

TEST_CASE("a refused pin id (423) held by another: jetfan stands by, what it held goes back, nothing new goes out",
          "[unit]") {
  Harness h(config({handler("builder", {"a.>"}, 1)}), kPin);
  const auto peer = h.hello("builder");
  deliver_pinned(h, 1, "PIN-1");
  deliver_pinned(h, 2, "PIN-1");  // held behind max_inflight 1
  const auto sent = h.msgs(peer);
  REQUIRE(sent.size() == 1);
  const auto pulls = ledger_pulls(h);
  REQUIRE(!pulls.empty());
  const std::size_t pulls_before = h.upstream.pulls.size();
  h.upstream.status(h.upstream.pulls[pulls.back()].id, "423", "Nats-Pin-Id mismatch");
  h.pump();
  // Until the consumer says whom the pin is with, jetfan pulls nothing and hands nothing back.
  CHECK(h.status().pin_role == "active (checking the pin)");
  CHECK(h.upstream.pulls.size() == pulls_before);
  CHECK(h.replied(Kind::kNak).empty());
  answer_pin_check(h, info_pinned_to("OTHER"));
  CHECK(h.status().pin_role == "standby");
  CHECK(h.status().pin_lost == 1);
  CHECK(h.replied(Kind::kNak) == std::vector<std::uint64_t>{2});
  // The one in flight still counts: its confirmation is acked at the server.
  h.send(peer, "ACK " + std::to_string(sent[0].id) + "\r\n");
  CHECK(h.replied(Kind::kAck) == std::vector<std::uint64_t>{1});
  CHECK(h.msgs(peer).empty());
  // New pulls name no pin.
  REQUIRE(!h.upstream.pull_pins.empty());
  CHECK(h.upstream.pull_pins.back().pin_id.empty());
  CHECK(h.broken.empty());
}

TEST_CASE("a full jetfan whose keep-alive a new leader refuses (no pin there) is pinned again, not failed over",
          "[unit]") {
  Harness h(holding_two(), kPin);
  pin_and_fill(h, h.hello("builder"));
  h.upstream.pulls.clear();
  h.upstream.pull_pins.clear();
  h.advance(milliseconds(1100));  // a keep-alive goes
  REQUIRE(h.upstream.pulls.size() == 1);
  REQUIRE(h.upstream.pull_pins[0].pin_id == "PIN-1");
  // The consumer's leader changed meanwhile; the new one pins no one and refuses the id.
  h.upstream.status(h.upstream.pulls[0].id, "423", "Nats-Wrong-Pin-Id");
  h.pump();
  const std::size_t probes = h.upstream.probes.size();
  answer_pin_check(h, info_pinned_to(""));
  CHECK(h.status().pin_role == "active (re-pinning)");
  // A new leader: requests sent to the old one wait nowhere, and the ledger asks the new one first.
  CHECK(h.upstream.probes.size() > probes);
  h.upstream.probe_answer(true);
  h.pump();
  // A claim for one message, without an id, is what a full jetfan can be pinned with.
  REQUIRE(h.upstream.pulls.size() == 2);
  CHECK(h.upstream.pulls[1].max_bytes == 0);
  CHECK(h.upstream.pull_pins[1].pin_id.empty());
  deliver_pinned(h, 3, "PIN-2");
  CHECK(h.status().pin_role == "active");
  CHECK(h.status().pin_lost == 0);
  CHECK(h.take_overs == 1);
  CHECK(h.replied(Kind::kNak).empty());
  CHECK(h.broken.empty());
}

TEST_CASE("a pin check that is not answered ends in a re-pin, and that, without a pin, in standing by", "[unit]") {
  Harness h(config({handler("builder", {"a.>"}, 1)}), kPin);
  h.hello("builder");
  deliver_pinned(h, 1, "PIN-1");
  const auto pulls = ledger_pulls(h);
  REQUIRE(!pulls.empty());
  h.upstream.status(h.upstream.pulls[pulls.back()].id, "423", "Nats-Pin-Id mismatch");
  h.pump();
  h.advance(PinTracker::kCheckWait + milliseconds(500));
  CHECK(h.status().pin_role == "active (re-pinning)");
  h.advance(PinTracker::kRepinWait);
  CHECK(h.status().pin_role == "standby");
  CHECK(h.status().pin_lost == 1);
}

TEST_CASE("a pinned jetfan that pulls nothing sends keep-alive pulls with its pin id, whose answers cost no credit",
          "[unit]") {
  Harness h(config({handler("builder", {"a.>"})}), kPin);
  h.hello("builder");
  deliver_pinned(h, 1, "PIN-1");
  const std::size_t before = h.upstream.pulls.size();
  h.advance(milliseconds(1100));  // a third of the pin timeout and more: no pull carried the id
  std::optional<std::size_t> keepalive;
  for (std::size_t i = before; i < h.upstream.pulls.size(); ++i) {
    if (PinnedReader::owns_pull(h.upstream.pulls[i].id)) keepalive = i;
  }
  REQUIRE(keepalive);
  const PullRequest& sent = h.upstream.pulls[*keepalive];
  CHECK(sent.batch == 1);
  CHECK(sent.max_bytes == 1);
  CHECK(h.upstream.pull_pins[*keepalive].pin_id == "PIN-1");
  CHECK(h.status().pin_keepalives >= 1);
  const std::size_t pulls_now = h.upstream.pulls.size();
  h.upstream.status(sent.id, "409", "Message Size Exceeds MaxBytes");
  h.pump();
  CHECK(h.status().pin_role == "active");
  // The ledger took no credit back for it: no new request replaced the keep-alive's answer.
  CHECK(h.upstream.pulls.size() == pulls_now);
}

TEST_CASE("step-down releases the pin at once, stands by, and pulls again once its requests have ended", "[unit]") {
  Harness h(config({handler("builder", {"a.>"})}), kPin);
  h.hello("builder");
  deliver_pinned(h, 1, "PIN-1");
  const auto done = h.dispatcher().step_down();
  REQUIRE(done);
  CHECK(done->done);
  CHECK_THAT(done->words, Catch::Contains("stepped down"));
  REQUIRE(h.upstream.api_requests.size() == 1);
  CHECK(h.upstream.api_requests[0].subject == "$JS.API.CONSUMER.UNPIN.STREAM.CONSUMER");
  CHECK(h.upstream.api_requests[0].body == R"({"group":"jobs"})");
  CHECK(h.status().pin_role == "standby");
  // Its requests end; none goes out during the hold (pull_expires and a second).
  h.upstream.pulls.clear();
  h.upstream.pull_pins.clear();
  h.advance(h.config().consumer.pull_expires);
  for (const auto& pull : h.upstream.pulls) h.upstream.status(pull.id, "408", "Request Timeout");
  h.upstream.pulls.clear();
  h.upstream.pull_pins.clear();
  h.advance(milliseconds(500));
  CHECK(ledger_pulls(h).empty());
  h.advance(milliseconds(1000));
  REQUIRE(!ledger_pulls(h).empty());
  CHECK(h.upstream.pull_pins.back().pin_id.empty());
  CHECK(h.upstream.pull_pins.back().group == "jobs");
}

TEST_CASE(
    "after step-down, deliveries with the old id are handed back, and a pin given to an old request is "
    "released again, not taken",
    "[unit]") {
  Harness h(config({handler("builder", {"a.>"})}), kPin);
  const auto peer = h.hello("builder");
  deliver_pinned(h, 1, "PIN-1");
  REQUIRE(h.msgs(peer).size() == 1);
  REQUIRE(h.dispatcher().step_down()->done);
  deliver_pinned(h, 2, "PIN-1");  // to a request that still carried the id
  CHECK(h.status().pin_role == "standby");
  deliver_pinned(h, 3, "PIN-2");  // the server pinned an old request anew
  CHECK(h.status().pin_role == "standby");
  CHECK(h.take_overs == 1);
  CHECK(h.upstream.api_requests.size() == 2);  // the step-down's UNPIN, and this one's
  CHECK(h.msgs(peer).empty());
  CHECK(h.replied(Kind::kNak) == std::vector<std::uint64_t>{2, 3});
  CHECK(h.broken.empty());
}

TEST_CASE("step-down on a standby is refused and sends nothing: the pin is another's", "[unit]") {
  Harness h(config({handler("builder", {"a.>"})}), kPin);
  const auto done = h.dispatcher().step_down();
  REQUIRE(done);
  CHECK_FALSE(done->done);
  CHECK_THAT(done->words, Catch::Contains("standing by"));
  h.advance(milliseconds(8000));
  CHECK(h.upstream.api_requests.empty());
}

TEST_CASE("a 423 answering a request that carried an older pin id does not make jetfan stand by", "[unit]") {
  Harness h(config({handler("builder", {"a.>"})}), kPin);
  const auto peer = h.hello("builder");
  deliver_pinned(h, 1, "PIN-1");
  h.upstream.pulls.clear();
  h.upstream.pull_pins.clear();
  for (std::uint64_t seq = 2; seq <= 6; ++seq) deliver_pinned(h, seq, "PIN-1");
  const auto with_old = ledger_pulls(h);
  REQUIRE(!with_old.empty());
  REQUIRE(h.upstream.pull_pins[with_old.back()].pin_id == "PIN-1");
  const std::uint64_t old_request = h.upstream.pulls[with_old.back()].id;
  deliver_pinned(h, 7, "PIN-2");  // pinned anew (a leader change between)
  h.upstream.status(old_request, "423", "Nats-Wrong-Pin-Id");
  h.pump();
  CHECK(h.status().pin_role == "active");
  CHECK(h.status().pin_lost == 0);
  CHECK(h.msgs(peer).size() == 7);
}

TEST_CASE("without a pinned_client group, step-down says there is nothing to step down from", "[unit]") {
  Harness h(config({handler("builder", {"a.>"})}));
  CHECK_FALSE(h.dispatcher().step_down());
  CHECK(h.upstream.pull_pins.front().group.empty());
}

TEST_CASE("a full jetfan re-pins after a leader change with a claim pull for one message, without an id", "[unit]") {
  Harness h(holding_two(), kPin);
  pin_and_fill(h, h.hello("builder"));
  const auto pulls = ledger_pulls(h);
  REQUIRE(!pulls.empty());
  h.upstream.status(h.upstream.pulls[pulls.back()].id, "409", "Leadership Change");
  h.pump();
  CHECK(h.status().pin_role == "active (re-pinning)");
  h.upstream.pulls.clear();
  h.upstream.pull_pins.clear();
  h.upstream.probe_answer(true);  // the new leader answers
  h.pump();
  // Full, the ledger asks for nothing; a keep-alive cannot be pinned. One claim goes out, and one only.
  CHECK(ledger_pulls(h).empty());
  REQUIRE(h.upstream.pulls.size() == 1);
  const PullRequest claim = h.upstream.pulls[0];
  CHECK(PinnedReader::owns_pull(claim.id));
  CHECK(claim.batch == 1);
  CHECK(claim.max_bytes == 0);
  CHECK(h.upstream.pull_pins[0].pin_id.empty());
  CHECK(h.upstream.pull_pins[0].group == "jobs");
  h.advance(milliseconds(600));
  CHECK(h.upstream.pulls.size() == 1);
  // It expired with nothing to give: another goes out while jetfan is still re-pinning.
  h.upstream.status(claim.id, "408", "Request Timeout");
  h.pump();
  REQUIRE(h.upstream.pulls.size() == 2);
  CHECK(h.status().pin_claims == 2);
  // The new leader pins it with the message it delivers: active again, no take-over, the message served.
  deliver_pinned(h, 3, "PIN-2");
  CHECK(h.status().pin_role == "active");
  CHECK(h.status().pin_lost == 0);
  CHECK(h.take_overs == 1);
  h.advance(milliseconds(4000));
  CHECK(h.status().pin_role == "active");
  CHECK(h.broken.empty());
}
