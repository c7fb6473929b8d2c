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

TEST_CASE("a refused pin id (423) makes jetfan stand by: what it held goes back, nothing new goes out", "[unit]") {
  Harness h(config({handler("builder", {"a.>"}, 1)}), kPin);
  const auto peer = h.hello("builder");
  deliver_pinned(h, 1, "PIN-1");
  deliver_pinned(h, 2, "PIN-1");  // held behind max_inflight 1
  const auto sent = h.msgs(peer);
  REQUIRE(sent.size() == 1);
  const auto pulls = ledger_pulls(h);
  REQUIRE(!pulls.empty());
  h.upstream.status(h.upstream.pulls[pulls.back()].id, "423", "Nats-Pin-Id mismatch");
  h.pump();
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
