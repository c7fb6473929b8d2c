// The real Dispatcher, driven through its seams: a FakeUpstream for JetStream, a ManualTimekeeper
// for time, and real HandlerSessions on socketpairs, read by the protocol's own DeliveryParser.
// Every test also runs a DispatchChecker on the dispatcher's tap, so the core's rules hold
// throughout.

#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dispatcher_harness.hpp"
#include "reload_plan.hpp"
#include "timekeeper.hpp"

using namespace jetfan;
using namespace jetfan::testing;

TEST_CASE("dispatcher: pulls at start, admits a HELLO with READY, routes by pattern, acks upstream once confirmed",
          "[unit]") {
  Harness h(config({handler("audit", {"a.*"}), handler("billing", {"b.>"})}));
  CHECK_FALSE(h.upstream.pulls.empty());
  CHECK(h.upstream.listening());
  const auto audit = h.hello("audit");
  const auto billing = h.hello("billing");
  h.deliver(1, "ev.a.x");
  h.deliver(2, "ev.b.y.z");
  const auto to_audit = h.msgs(audit);
  REQUIRE(to_audit.size() == 1);
  CHECK(to_audit[0].key == "a.x");
  CHECK(to_audit[0].stream_seq == 1);
  CHECK(to_audit[0].payload == "payload 1");
  REQUIRE(h.msgs(billing).size() == 1);
  CHECK(h.replied(Kind::kAck).empty());
  h.send(audit, "ACK " + std::to_string(to_audit[0].id) + "\r\n");
  CHECK(h.replied(Kind::kAck) == std::vector<std::uint64_t>{1});
  CHECK(h.broken.empty());
}

TEST_CASE("dispatcher: one message reaches a version 1 and a version 2 handler, each in its own MSG layout", "[unit]") {
  Harness h(config({handler("old", {"a.*"}), handler("new", {"a.*"})}));
  const auto old_peer = h.hello("old", 1);
  const auto new_peer = h.hello("new", 2);
  constexpr std::uint64_t kPublished = 1'700'000'000'123'456'789;
  h.upstream.deliver(FakeUpstream::Message{7, "ev.a.b", "payload", "NATS/1.0\r\nX: 1\r\n\r\n", 1, kPublished});
  h.pump();
  const auto old_msgs = h.msgs(old_peer);
  const auto new_msgs = h.msgs(new_peer);
  REQUIRE(old_msgs.size() == 1);
  REQUIRE(new_msgs.size() == 1);
  for (const auto& d : {old_msgs[0], new_msgs[0]}) {
    CHECK(d.key == "a.b");
    CHECK(d.stream_seq == 7);
    CHECK(d.headers == "NATS/1.0\r\nX: 1\r\n\r\n");
    CHECK(d.payload == "payload");
  }
  CHECK(old_msgs[0].published_ns == 0);
  CHECK(old_msgs[0].subject.empty());
  CHECK(new_msgs[0].published_ns == kPublished);
  CHECK(new_msgs[0].subject == "ev.a.b");
  // A handler newer than jetfan gets the newest version jetfan has (hello() checks its READY).
  h.hello("new", 9);
  CHECK(h.dispatcher().instances(1) == 2);
}

TEST_CASE("dispatcher: a HELLO is refused with ERR for an undeclared handler, version 0, and past max_instances",
          "[unit]") {
  auto c = config({handler("audit", {"a.*"})});
  c.handlers[0].max_instances = 1;
  Harness h(std::move(c));
  for (const std::string hello : {"HELLO nobody 1\r\n", "HELLO audit 0\r\n"}) {
    INFO(hello);
    const auto peer = h.connect();
    REQUIRE(peer);
    h.send(*peer, hello);
    const auto frames = h.read(*peer);
    REQUIRE(frames.size() == 1);
    CHECK(frames[0].kind == proto::Frame::Kind::kErr);
    CHECK(h.closed(*peer));
  }
  h.hello("audit");
  const auto second = h.connect();
  h.send(*second, "HELLO audit 1\r\n");
  const auto frames = h.read(*second);
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].kind == proto::Frame::Kind::kErr);
  CHECK(frames[0].error.find("max_instances") != std::string::npos);
  CHECK(h.dispatcher().instances(0) == 1);
}

TEST_CASE("dispatcher: a HELLO from a peer outside the allow list is refused", "[unit]") {
  auto c = config({handler("audit", {"a.*"})});
  c.handlers[0].allow.uids = {::getuid() + 1};
  Harness h(std::move(c));
  const auto peer = h.connect();
  h.send(*peer, "HELLO audit 1\r\n");
  const auto frames = h.read(*peer);
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].kind == proto::Frame::Kind::kErr);
  CHECK(h.dispatcher().instances(0) == 0);
}

TEST_CASE("dispatcher: the oldest connection without HELLO is evicted, and one past max_connections refused",
          "[unit]") {
  auto c = config({handler("audit", {"a.*"})});
  c.socket.max_connections = 2;
  c.socket.max_unidentified = 1;
  Harness h(std::move(c));
  const auto first = h.connect();
  const auto second = h.connect();
  CHECK(h.closed(*first));  // evicted for the newer one
  CHECK_FALSE(h.closed(*second));
  h.send(*second, "HELLO audit 1\r\n");
  h.hello("audit");
  const auto third = h.connect();  // two connections are there, both identified
  REQUIRE(third);
  const auto frames = h.read(*third);
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].error.find("max_connections") != std::string::npos);
  CHECK(h.closed(*third));
  CHECK(h.dispatcher().instances(0) == 2);
}

TEST_CASE("dispatcher: a message for two handlers goes back by NAK when one fails it, and PING has its PONG",
          "[unit]") {
  Harness h(config({handler("audit", {"a.*"}), handler("all", {">"})}));
  const auto audit = h.hello("audit");
  const auto all = h.hello("all");
  h.deliver(1, "ev.a.x");
  const auto a = h.msgs(audit);
  const auto b = h.msgs(all);
  REQUIRE((a.size() == 1 && b.size() == 1));
  h.send(all, "ACK " + std::to_string(b[0].id) + "\r\n");
  CHECK(h.upstream.replies.empty());
  h.send(audit, "NAK " + std::to_string(a[0].id) + "\r\n");
  REQUIRE(h.replied(Kind::kNak) == std::vector<std::uint64_t>{1});
  CHECK(h.upstream.replies[0].delay > Duration(0));
  h.send(audit, "PING\r\n");
  const auto frames = h.read(audit);
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].kind == proto::Frame::Kind::kPong);
  // The copy the server sends again goes to the one that failed it, not to the one that confirmed.
  h.deliver(1, "ev.a.x", 2);
  CHECK(h.msgs(audit).size() == 1);
  CHECK(h.msgs(all).empty());
  CHECK(h.broken.empty());
}

TEST_CASE("dispatcher: a delivery not confirmed within ack_timeout fails and goes back, and so does a disconnect",
          "[unit]") {
  auto c = config({handler("audit", {"a.*"})});
  c.handlers[0].ack_timeout = milliseconds(1000);
  Harness h(std::move(c));
  const auto audit = h.hello("audit");
  h.deliver(1, "ev.a.x");
  REQUIRE(h.msgs(audit).size() == 1);
  h.advance(milliseconds(900));
  CHECK(h.replied(Kind::kNak).empty());
  h.advance(milliseconds(200));
  CHECK(h.replied(Kind::kNak) == std::vector<std::uint64_t>{1});
  h.deliver(2, "ev.a.y");
  REQUIRE(h.msgs(audit).size() == 1);
  h.hang_up(audit);
  CHECK(h.replied(Kind::kNak) == std::vector<std::uint64_t>{1, 2});
  CHECK(h.dispatcher().instances(0) == 0);
  CHECK(h.broken.empty());
}

TEST_CASE("dispatcher: a message with no key is terminated, one nobody declared is acked", "[unit]") {
  Harness h(config({handler("audit", {"a.*"})}));
  h.deliver(1, "other.subject");
  h.deliver(2, "ev.z.z");
  CHECK(h.replied(Kind::kTerm) == std::vector<std::uint64_t>{1});
  CHECK(h.replied(Kind::kAck) == std::vector<std::uint64_t>{2});
}

TEST_CASE("dispatcher: full, a hand_back handler past its share hands back its oldest, a hold one stalls", "[unit]") {
  auto c = config({handler("stuck", {"a.*"}), handler("other", {"a.*"})});
  c.consumer.max_held = 4;
  c.handlers[0].when_full = WhenFull::kHandBack;
  Harness h(std::move(c));
  const auto other = h.hello("other");
  for (std::uint64_t seq = 1; seq <= 4; ++seq) h.deliver(seq, "ev.a.x");
  for (const auto& msg : h.msgs(other)) h.send(other, "ACK " + std::to_string(msg.id) + "\r\n");
  h.advance(milliseconds(600));  // housekeeping looks
  // "stuck" owes 4, its share is 4 / 2: its two oldest go back; "other" confirmed them already.
  CHECK(h.replied(Kind::kNak) == std::vector<std::uint64_t>{1, 2});
  CHECK_FALSE(h.status().stall);

  auto held = config({handler("stuck", {"a.*"})});
  held.consumer.max_held = 4;
  Harness s(std::move(held));
  for (std::uint64_t seq = 1; seq <= 4; ++seq) s.deliver(seq, "ev.a.x");
  s.advance(milliseconds(4000));
  CHECK_FALSE(s.status().stall);
  s.advance(milliseconds(2000));
  const auto stall = s.status().stall;
  REQUIRE(stall);
  CHECK(stall->handler == "stuck");
  CHECK(s.upstream.replies.empty());  // held, not handed back
  const auto stuck = s.hello("stuck");
  for (const auto& msg : s.msgs(stuck)) s.send(stuck, "ACK " + std::to_string(msg.id) + "\r\n");
  s.advance(milliseconds(600));
  CHECK_FALSE(s.status().stall);
}

TEST_CASE(
    "dispatcher: full while jetfan holds an ordered handler back after deliveries were lost, its backlog goes back",
    "[unit]") {
  auto c = config({handler("ordered", {"a.*"}), handler("other", {"a.*"})});
  c.consumer.max_held = 4;
  c.handlers[0].order_by = OrderBy{OrderBy::Kind::kKey, 0, ""};  // when_full: wait, the default
  Harness h(std::move(c));
  const auto ordered = h.hello("ordered");
  const auto other = h.hello("other");
  h.deliver(1, "ev.a.x");
  for (const auto session : {ordered, other}) {
    for (const auto& msg : h.msgs(session)) h.send(session, "ACK " + std::to_string(msg.id) + "\r\n");
  }
  h.upstream.lose();  // seq 2 never arrives: everything of "ordered" above seq 1 waits for it
  for (std::uint64_t seq = 3; seq <= 6; ++seq) h.deliver(seq, "ev.a.y");
  CHECK(h.msgs(ordered).empty());
  for (const auto& msg : h.msgs(other)) h.send(other, "ACK " + std::to_string(msg.id) + "\r\n");
  h.advance(milliseconds(600));  // housekeeping looks; the hold is 4 keepalives at least (AckWait 30 s)
  // "ordered" owes 4, its share is 4 / 2: its two newest go back (3 and 4 never wait for them), and
  // room is made for pulls.
  CHECK(h.replied(Kind::kNak) == std::vector<std::uint64_t>{6, 5});
  CHECK_FALSE(h.status().stall);
}

TEST_CASE(
    "dispatcher: deliveries lost on the way hold an ordered handler until they are back, and a reconnect alone "
    "holds nothing",
    "[unit]") {
  auto c = config({handler("ordered", {"a.*"})});
  c.handlers[0].order_by = OrderBy{OrderBy::Kind::kKey, 0, ""};
  Harness h(std::move(c));
  const auto ordered = h.hello("ordered");
  h.upstream.reconnect();
  h.pump();
  h.upstream.probe_answer(true);
  h.pump();
  h.deliver(1, "ev.a.x");
  auto msgs = h.msgs(ordered);
  REQUIRE(msgs.size() == 1);  // nothing was lost: the reconnect held nothing
  h.send(ordered, "ACK " + std::to_string(msgs[0].id) + "\r\n");
  h.upstream.lose();
  h.deliver(3, "ev.a.x");
  CHECK(h.msgs(ordered).empty());
  CHECK(h.dispatcher().core().counters().delivery_gaps == 1);
  h.upstream.deliver(FakeUpstream::Message{2, "ev.a.x", "p", "", 2});  // back after AckWait
  h.pump();
  msgs = h.msgs(ordered);
  REQUIRE(msgs.size() == 1);
  CHECK(msgs[0].stream_seq == 2);
}

TEST_CASE("dispatcher: a drain hands back what is not in flight, lets deliveries in flight finish, then finishes",
          "[unit]") {
  Harness h(config({handler("audit", {"a.*"}, 1)}));
  const auto audit = h.hello("audit");
  h.deliver(1, "ev.a.x");
  h.deliver(2, "ev.a.y");
  const auto msgs = h.msgs(audit);
  REQUIRE(msgs.size() == 1);
  const std::size_t pulls = h.upstream.pulls.size();
  h.dispatcher().begin_drain();
  h.pump();
  CHECK(h.stopped_accepting);
  CHECK(h.replied(Kind::kNak) == std::vector<std::uint64_t>{2});
  CHECK_FALSE(h.connect());  // no new connection while draining
  CHECK_FALSE(h.finished);
  h.send(audit, "ACK " + std::to_string(msgs[0].id) + "\r\n");
  CHECK(h.replied(Kind::kAck) == std::vector<std::uint64_t>{1});
  CHECK(h.finished);
  CHECK(h.upstream.closed);
  CHECK(h.upstream.pulls.size() == pulls);  // no pull since the drain began
  CHECK(h.broken.empty());
}

TEST_CASE("dispatcher: a drain whose deliveries do not finish within drain_timeout hands them back", "[unit]") {
  Harness h(config({handler("audit", {"a.*"})}));
  const auto audit = h.hello("audit");
  h.deliver(1, "ev.a.x");
  REQUIRE(h.msgs(audit).size() == 1);
  h.dispatcher().begin_drain();
  h.advance(milliseconds(4900));
  CHECK_FALSE(h.finished);
  h.advance(milliseconds(200));
  CHECK(h.finished);
  CHECK(h.replied(Kind::kNak) == std::vector<std::uint64_t>{1});
  CHECK(h.closed(audit));
}

TEST_CASE("dispatcher: a reconnect or an unexpected status probes the consumer, and pulls anew once it answers",
          "[unit]") {
  Harness h(config({handler("audit", {"a.*"})}));
  for (const int how : {0, 1, 2}) {
    INFO(how);
    h.upstream.pulls.clear();
    h.upstream.probes.clear();
    if (how == 0) h.upstream.reconnect();
    if (how == 1) h.upstream.status(1, "409", "Leadership Change");
    if (how == 2) h.upstream.status(1, "409", "Consumer Deleted");
    h.pump();
    REQUIRE_FALSE(h.upstream.probes.empty());
    h.advance(milliseconds(250));  // no answer yet: it asks again
    CHECK(h.upstream.probes.size() >= 2);
    h.upstream.pulls.clear();
    h.upstream.probe_answer(true);
    h.pump();
    CHECK_FALSE(h.upstream.pulls.empty());
  }
}

TEST_CASE("dispatcher: 409 Batch Completed ends a request without a probe, and its messages keep their room",
          "[unit]") {
  // nats-server 2.10 and later; on a replicated consumer it may come before the batch's messages.
  Harness h(config({handler("audit", {"a.*"})}));
  h.pump();
  REQUIRE_FALSE(h.upstream.pulls.empty());
  const std::uint64_t first = h.upstream.pulls.front().id;
  h.upstream.pulls.clear();
  h.upstream.probes.clear();
  h.upstream.status(first, "409", "Batch Completed");
  h.pump();
  h.advance(milliseconds(250));
  CHECK(h.upstream.probes.empty());
  CHECK(h.upstream.pulls.empty());  // the batch is still on its way: no room was freed
}

TEST_CASE("dispatcher: a reload that removes a handler settles what it held and dismisses its instances", "[unit]") {
  Harness h(config({handler("audit", {"a.*"}), handler("gone", {"a.*"})}));
  const auto audit = h.hello("audit");
  const auto gone = h.hello("gone");
  h.deliver(1, "ev.a.x");
  const auto a = h.msgs(audit);
  REQUIRE(a.size() == 1);
  REQUIRE(h.msgs(gone).size() == 1);
  h.send(audit, "ACK " + std::to_string(a[0].id) + "\r\n");
  CHECK(h.replied(Kind::kAck).empty());  // "gone" has not confirmed

  const Config running = h.config();
  h.checking = false;
  h.config().handlers.pop_back();
  const ReloadPlan plan = plan_reload(running, h.config());
  REQUIRE(plan.refused.empty());
  const auto lines = h.dispatcher().apply_reload(plan, serve(h.config()));
  h.pump();
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("\"gone\" removed") != std::string::npos);
  CHECK(h.replied(Kind::kAck) == std::vector<std::uint64_t>{1});
  CHECK(h.closed(gone));
  CHECK_FALSE(h.closed(audit));
}

TEST_CASE("dispatcher: an ordered handler gets one message of a key at a time, and jetfan retries its NAK itself",
          "[unit]") {
  auto c = config({handler("ordered", {"m.*"}), handler("all", {">"})});
  c.handlers[0].order_by = OrderBy{OrderBy::Kind::kToken, 2, ""};
  Harness h(std::move(c));
  const auto ordered = h.hello("ordered", 2);
  const auto all = h.hello("all");
  h.deliver(1, "ev.m.k1");
  h.deliver(2, "ev.m.k1");
  h.deliver(3, "ev.m.k2");
  auto first = h.msgs(ordered);
  REQUIRE(first.size() == 2);
  CHECK(first[0].stream_seq == 1);
  CHECK(first[1].stream_seq == 3);  // another key goes at once
  auto to_all = h.msgs(all);
  CHECK(to_all.size() == 3);  // an unordered handler of the same messages is not held up
  for (const auto& msg : to_all) h.send(all, "ACK " + std::to_string(msg.id) + "\r\n");
  const auto view = h.status().handlers[0];
  CHECK(view.order_by == "token:2");
  CHECK(view.order_blocked_keys == 1);
  CHECK(view.order_waiting == 1);

  h.send(ordered, "NAK " + std::to_string(first[0].id) + "\r\n");
  CHECK(h.replied(Kind::kNak).empty());  // kept in jetfan, not handed back
  CHECK(h.msgs(ordered).empty());        // and 2 still waits behind it
  h.advance(milliseconds(1000));         // delivery.nak_delay
  auto again = h.msgs(ordered);
  REQUIRE(again.size() == 1);
  CHECK(again[0].stream_seq == 1);
  // Its second delivery to the handler, of the server's first.
  CHECK(first[0].deliveries == 1);
  CHECK(again[0].deliveries == 2);
  CHECK(again[0].server_deliveries == 1);
  h.send(ordered, "ACK " + std::to_string(again[0].id) + "\r\n");
  auto next = h.msgs(ordered);
  REQUIRE(next.size() == 1);
  CHECK(next[0].stream_seq == 2);
  h.send(ordered, "ACK " + std::to_string(next[0].id) + "\r\n");
  h.send(ordered, "ACK " + std::to_string(first[1].id) + "\r\n");
  auto acked = h.replied(Kind::kAck);
  std::sort(acked.begin(), acked.end());
  CHECK(acked == std::vector<std::uint64_t>{1, 2, 3});
  CHECK(h.dispatcher().core().counters().order_retries == 1);
  CHECK(h.broken.empty());
}

TEST_CASE("dispatcher: ordered by a header, a message without it goes unordered and is counted", "[unit]") {
  auto c = config({handler("ordered", {"m.*"})});
  c.handlers[0].order_by = OrderBy{OrderBy::Kind::kHeader, 0, "Entity"};
  Harness h(std::move(c));
  const auto ordered = h.hello("ordered");
  const std::string entity = "NATS/1.0\r\nEntity: e1\r\n\r\n";
  h.upstream.deliver(FakeUpstream::Message{1, "ev.m.a", "one", entity, 1, 0});
  h.upstream.deliver(FakeUpstream::Message{2, "ev.m.b", "two", entity, 1, 0});
  h.upstream.deliver(FakeUpstream::Message{3, "ev.m.c", "three", "", 1, 0});
  h.pump();
  const auto msgs = h.msgs(ordered);
  REQUIRE(msgs.size() == 2);  // 2 waits for 1 (one entity), 3 has no entity
  CHECK(msgs[0].stream_seq == 1);
  CHECK(msgs[1].stream_seq == 3);
  CHECK(h.status().handlers[0].without_order_key == 1);
  CHECK(h.broken.empty());
}

TEST_CASE("dispatcher: a drain hands back an ordered handler's waiting messages, never delivers them", "[unit]") {
  auto c = config({handler("ordered", {"m.*"})});
  c.handlers[0].order_by = OrderBy{OrderBy::Kind::kKey, 0, ""};
  Harness h(std::move(c));
  const auto ordered = h.hello("ordered");
  for (std::uint64_t seq = 1; seq <= 3; ++seq) h.deliver(seq, "ev.m.k");
  const auto msgs = h.msgs(ordered);
  REQUIRE(msgs.size() == 1);
  h.dispatcher().begin_drain();
  h.pump();
  CHECK(h.replied(Kind::kNak) == std::vector<std::uint64_t>{2, 3});
  h.send(ordered, "ACK " + std::to_string(msgs[0].id) + "\r\n");
  CHECK(h.msgs(ordered).empty());
  CHECK(h.replied(Kind::kAck) == std::vector<std::uint64_t>{1});
  CHECK(h.finished);
  CHECK(h.broken.empty());
}

namespace {

std::string base64(std::string_view bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const auto n = (static_cast<unsigned char>(bytes[i]) << 16) | (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                   static_cast<unsigned char>(bytes[i + 2]);
    for (int shift = 18; shift >= 0; shift -= 6) out.push_back(kAlphabet[(n >> shift) & 63]);
  }
  if (i < bytes.size()) {
    const bool two = i + 1 < bytes.size();
    const auto n =
        (static_cast<unsigned char>(bytes[i]) << 16) | (two ? static_cast<unsigned char>(bytes[i + 1]) << 8 : 0);
    out.push_back(kAlphabet[(n >> 18) & 63]);
    out.push_back(kAlphabet[(n >> 12) & 63]);
    out.push_back(two ? kAlphabet[(n >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

// A dead letter of `handler` as MSG.GET returns it, at `seq` of its stream; `more` are field lines
// after jetfan's.
std::string stored_letter(std::uint64_t seq, const std::string& handler, std::uint64_t original,
                          const std::string& more = "") {
  const std::string headers = "NATS/1.0\r\nTrace: t1\r\nJetfan-Handler: " + handler +
                              "\r\nJetfan-Reason: TERM\r\nJetfan-Attempts: 2\r\nJetfan-Subject: ev.a.x\r\n"
                              "Jetfan-Sequence: " +
                              std::to_string(original) + "\r\n" + more + "\r\n";
  return "{\"type\":\"io.nats.jetstream.api.v1.stream_msg_get_response\",\"message\":{\"subject\":\"dlq.builder\","
         "\"seq\":" +
         std::to_string(seq) + ",\"hdrs\":\"" + base64(headers) + "\",\"data\":\"" + base64("the payload") +
         "\",\"time\":\"2026-12-01T10:00:00Z\"}}";
}

const char* kNotFound = R"({"error":{"code":404,"err_code":10037,"description":"no message found"}})";

struct JobLog {
  std::vector<std::string> lines;
  std::optional<bool> ok;
  std::string last;
  DeadLetterJobOutput output() {
    return DeadLetterJobOutput{[this](const std::string& line) {
                                 lines.push_back(line);
                                 return true;
                               },
                               [this](bool done_ok, const std::string& line) {
                                 ok = done_ok;
                                 last = line;
                               }};
  }
};

// A redrive of builder's dead letters: all of them (--all), or stream seqs from..to (--seq).
DeadLetterJob builder_redrive(std::optional<std::pair<std::uint64_t, std::uint64_t>> seqs = std::nullopt) {
  DeadLetterJob job;
  job.kind = DeadLetterJob::Kind::kRedrive;
  job.handler = "builder";
  job.all = !seqs;
  if (seqs) std::tie(job.from, job.to) = *seqs;
  return job;
}

Config redrive_config() {
  auto builder = handler("builder", {"a.*"});
  builder.dead_letter_subject = "dlq.builder";
  builder.retry = RetrySettings{2, milliseconds(100), milliseconds(100)};
  return config({builder, handler("audit", {"a.*"})});
}

// The last api request, answered with `json`.
const FakeUpstream::ApiRequest& answer_last(Harness& h, const std::string& json) {
  REQUIRE_FALSE(h.upstream.api_requests.empty());
  const auto& request = h.upstream.api_requests.back();
  h.upstream.api_answer(request.id, json);
  h.pump();
  return request;
}

}  // namespace

TEST_CASE("dispatcher: a redrive delivers each dead letter to its handler alone, and deletes it once confirmed",
          "[unit]") {
  Harness h(redrive_config());
  h.checking = false;  // the checker models messages of the stream only
  const auto builder = h.hello("builder");
  const auto audit = h.hello("audit");
  JobLog log;
  DeadLetterJob job = builder_redrive();
  REQUIRE_FALSE(h.dispatcher().start_dead_letter_job(job, log.output()));
  REQUIRE(h.upstream.api_requests.size() == 1);
  CHECK(h.upstream.api_requests[0].subject == "$JS.API.STREAM.NAMES");
  answer_last(h, R"({"streams":["DLQ"]})");
  CHECK(h.upstream.api_requests.back().body == R"({"last_by_subj":"dlq.builder"})");
  answer_last(h, stored_letter(5, "builder", 17));
  CHECK(h.upstream.api_requests.back().subject == "$JS.API.STREAM.MSG.GET.DLQ");
  CHECK(h.upstream.api_requests.back().body == R"({"next_by_subj":"dlq.builder","seq":1})");
  answer_last(h, stored_letter(3, "builder", 17));
  const auto sent = h.msgs(builder);
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].key == "a.x");
  CHECK(sent[0].stream_seq == 17);
  CHECK(sent[0].payload == "the payload");
  CHECK(h.msgs(audit).empty());
  const std::size_t before = h.upstream.api_requests.size();
  h.send(builder, "ACK " + std::to_string(sent[0].id) + "\r\n");
  CHECK(h.upstream.replies.empty());  // nothing to the module's consumer
  REQUIRE(h.upstream.api_requests.size() == before + 1);
  CHECK(h.upstream.api_requests.back().subject == "$JS.API.STREAM.MSG.DELETE.DLQ");
  CHECK(h.upstream.api_requests.back().body == R"({"seq":3})");
  CHECK_FALSE(log.ok);
  answer_last(h, R"({"success":true})");
  CHECK(h.upstream.api_requests.back().body == R"({"next_by_subj":"dlq.builder","seq":4})");
  answer_last(h, stored_letter(5, "builder", 18));  // its last: where --all ends
  const auto second = h.msgs(builder);
  REQUIRE(second.size() == 1);
  h.send(builder, "ACK " + std::to_string(second[0].id) + "\r\n");
  answer_last(h, R"({"success":true})");
  REQUIRE(log.ok);
  CHECK(*log.ok);
  CHECK(log.last.find("2 confirmed and deleted") != std::string::npos);
  CHECK(h.dispatcher().redrive_counts().at("builder").confirmed == 2);
  CHECK(h.upstream.replies.empty());
}

TEST_CASE("dispatcher: a redriven dead letter the handler fails again is dead-lettered anew, then deleted", "[unit]") {
  Harness h(redrive_config());
  h.checking = false;
  const auto builder = h.hello("builder");
  JobLog log;
  const DeadLetterJob job = builder_redrive({{3, 3}});
  REQUIRE_FALSE(h.dispatcher().start_dead_letter_job(job, log.output()));
  answer_last(h, R"({"streams":["DLQ"]})");
  answer_last(h, stored_letter(3, "builder", 17));
  auto sent = h.msgs(builder);
  REQUIRE(sent.size() == 1);
  h.send(builder, "NAK " + std::to_string(sent[0].id) + "\r\n");
  h.advance(milliseconds(100));
  sent = h.msgs(builder);
  REQUIRE(sent.size() == 1);
  const std::size_t before = h.upstream.api_requests.size();
  h.send(builder, "NAK " + std::to_string(sent[0].id) + "\r\n");
  REQUIRE(h.upstream.published.size() == 1);  // its new dead letter
  CHECK(h.upstream.published[0].subject == "dlq.builder");
  CHECK(h.upstream.published[0].payload == "the payload");
  CHECK(h.upstream.published[0].headers.find("Trace: t1\r\n") != std::string::npos);
  CHECK(h.upstream.published[0].headers.find("Jetfan-Sequence: 17\r\n") != std::string::npos);
  CHECK(h.upstream.api_requests.size() == before);  // not deleted before the new one is stored
  h.upstream.publish_answer(h.upstream.published[0].id, PublishResult{true, 9, "DLQ", {}});
  h.pump();
  REQUIRE(h.upstream.api_requests.size() == before + 1);
  CHECK(h.upstream.api_requests.back().body == R"({"seq":3})");
  answer_last(h, R"({"success":true})");
  REQUIRE(log.ok);
  CHECK_FALSE(*log.ok);  // not all went through
  CHECK(log.last.find("1 failed again") != std::string::npos);
  CHECK(h.upstream.replies.empty());
}

TEST_CASE(
    "dispatcher: a redrive gives the handler the message's header block byte for byte, and so does its dead "
    "letter anew",
    "[unit]") {
  using namespace std::string_literals;
  Harness h(redrive_config());
  h.checking = false;
  const auto builder = h.hello("builder", 2);
  JobLog log;
  REQUIRE_FALSE(h.dispatcher().start_dead_letter_job(builder_redrive({{3, 3}}), log.output()));
  answer_last(h, R"({"streams":["DLQ"]})");
  const std::string original = "NATS/1.0 503 No Responders\r\nB: 2\r\nK: a\0b\r\nB: 1\r\n\r\n"s;
  const std::string carried = "Jetfan-Headers: " + base64(original) + "\r\n";
  answer_last(h, stored_letter(3, "builder", 17, carried));
  auto sent = h.msgs(builder);
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].headers == original.substr(0, original.size() - 2) +
                               "Jetfan-Handler: builder\r\nJetfan-Reason: TERM\r\nJetfan-Attempts: 2\r\n"
                               "Jetfan-Subject: ev.a.x\r\nJetfan-Sequence: 17\r\n" +
                               carried + "\r\n");
  CHECK(sent[0].deliveries == 1);
  h.send(builder, "NAK " + std::to_string(sent[0].id) + "\r\n");
  h.advance(milliseconds(100));
  sent = h.msgs(builder);
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].deliveries == 2);  // retried inside jetfan: a redrive never goes to the server
  h.send(builder, "NAK " + std::to_string(sent[0].id) + "\r\n");
  REQUIRE(h.upstream.published.size() == 1);
  CHECK(h.upstream.published[0].headers.find("\r\n" + carried) != std::string::npos);
}

TEST_CASE("dispatcher: dlq list reads the handler's dead letters only, and a dry run redrives nothing", "[unit]") {
  Harness h(redrive_config());
  h.checking = false;
  const auto builder = h.hello("builder");
  for (const bool dry_run : {false, true}) {
    JobLog log;
    DeadLetterJob job;
    job.kind = dry_run ? DeadLetterJob::Kind::kRedrive : DeadLetterJob::Kind::kList;
    job.handler = "builder";
    job.dry_run = dry_run;
    job.from = 1;
    REQUIRE_FALSE(h.dispatcher().start_dead_letter_job(job, log.output()));
    answer_last(h, R"({"streams":["DLQ"]})");
    answer_last(h, stored_letter(2, "other", 11));  // another handler's, on a shared subject
    answer_last(h, stored_letter(4, "builder", 12));
    answer_last(h, kNotFound);
    REQUIRE(log.ok);
    CHECK(*log.ok);
    REQUIRE(log.lines.size() == 1);
    CHECK(log.lines[0].find("seq 4") == 0);
    CHECK(log.last.find("OK 1 dead letter(s)") == 0);
  }
  CHECK(h.msgs(builder).empty());
  for (const auto& request : h.upstream.api_requests) CHECK(request.subject.find("DELETE") == std::string::npos);
}

TEST_CASE("dispatcher: a drain cuts a redrive short without deleting the dead letter", "[unit]") {
  Harness h(redrive_config());
  h.checking = false;
  const auto builder = h.hello("builder");
  JobLog log;
  const DeadLetterJob job = builder_redrive({{3, 3}});
  REQUIRE_FALSE(h.dispatcher().start_dead_letter_job(job, log.output()));
  CHECK(h.dispatcher().start_dead_letter_job(job, JobLog().output()));  // one redrive per handler at a time
  answer_last(h, R"({"streams":["DLQ"]})");
  answer_last(h, stored_letter(3, "builder", 17));
  REQUIRE(h.msgs(builder).size() == 1);
  h.dispatcher().begin_drain();
  h.advance(milliseconds(6000));  // past drain_timeout: what is in flight is abandoned
  REQUIRE(log.ok);
  CHECK_FALSE(*log.ok);
  for (const auto& request : h.upstream.api_requests) CHECK(request.subject.find("DELETE") == std::string::npos);
  CHECK(h.dispatcher().redrive_counts().at("builder").kept == 1);
}

TEST_CASE("dispatcher: a dead-letter job is refused for a handler without dead letters or unknown", "[unit]") {
  Harness h(redrive_config());
  DeadLetterJob job;
  job.handler = "audit";
  CHECK(h.dispatcher().start_dead_letter_job(job, JobLog().output()));
  job.handler = "nobody";
  CHECK(h.dispatcher().start_dead_letter_job(job, JobLog().output()));
  job.handler = "builder";
  job.kind = DeadLetterJob::Kind::kRedrive;
  job.all = true;
  const auto refused = h.dispatcher().start_dead_letter_job(job, JobLog().output());
  REQUIRE(refused);
  CHECK(refused->find("no connected instance") != std::string::npos);
  CHECK(h.upstream.api_requests.empty());
}

TEST_CASE("dispatcher: a handler's TERM reason goes into its dead letter's Jetfan-Reason", "[unit]") {
  Harness h(redrive_config());
  const auto builder = h.hello("builder");
  h.hello("audit");
  h.deliver(7, "ev.a.x");
  h.deliver(8, "ev.a.y");
  auto sent = h.msgs(builder);
  REQUIRE(sent.size() == 2);
  h.send(builder,
         "TERM " + std::to_string(sent[0].id) + " no machine for it\r\nTERM " + std::to_string(sent[1].id) + "\r\n");
  REQUIRE(h.upstream.published.size() == 2);
  CHECK(h.upstream.published[0].headers.find("Jetfan-Reason: TERM: no machine for it\r\n") != std::string::npos);
  CHECK(h.upstream.published[1].headers.find("Jetfan-Reason: TERM\r\n") != std::string::npos);  // none given
}

TEST_CASE("dispatcher: a version 3 NAK's reason goes into the dead letter when that NAK was the last word", "[unit]") {
  Harness h(redrive_config());  // builder: 2 attempts, then the dead letter
  const auto builder = h.hello("builder", 3);
  const auto audit = h.hello("audit");
  h.deliver(7, "ev.a.x");
  h.deliver(8, "ev.a.y");
  h.deliver(9, "ev.a.z");
  for (const auto& d : h.msgs(audit)) h.send(audit, "ACK " + std::to_string(d.id) + "\r\n");
  auto first = h.msgs(builder);
  REQUIRE(first.size() == 3);
  // 7: two NAKs with reasons; 8: a reason, then a NAK without one; 9: a reason, then a TERM.
  h.send(builder, "NAK " + std::to_string(first[0].id) + " - database down\r\nNAK " + std::to_string(first[1].id) +
                      " 0 upstream 503\r\nNAK " + std::to_string(first[2].id) + " - look again\r\n");
  h.advance(milliseconds(150));
  h.deliver(7, "ev.a.x", 2);  // the server's redeliveries
  h.deliver(8, "ev.a.y", 2);
  h.deliver(9, "ev.a.z", 2);
  auto again = h.msgs(builder);
  REQUIRE(again.size() == 3);
  std::map<std::uint64_t, std::uint64_t> id_of_seq;
  for (const auto& d : again) id_of_seq[d.stream_seq] = d.id;
  h.send(builder, "NAK " + std::to_string(id_of_seq.at(7)) + " 5 still down\r\nNAK " + std::to_string(id_of_seq.at(8)) +
                      "\r\nTERM " + std::to_string(id_of_seq.at(9)) + "\r\n");
  REQUIRE(h.upstream.published.size() == 3);
  std::map<std::string, int> reasons;
  for (const auto& published : h.upstream.published) {
    const auto start = published.headers.find("Jetfan-Reason: ");
    REQUIRE(start != std::string::npos);
    const auto end = published.headers.find("\r\n", start);
    ++reasons[published.headers.substr(start + 15, end - start - 15)];
  }
  CHECK(reasons["max_attempts 2 used up; last: nak: still down"] == 1);
  CHECK(reasons["max_attempts 2 used up; last: nak"] == 1);  // the last NAK said nothing
  CHECK(reasons["TERM"] == 1);                               // a NAK's words are not a TERM's
}

TEST_CASE("dispatcher: a NAK with a reason is refused on a version 2 connection, as version 2 always did", "[unit]") {
  Harness h(redrive_config());
  const auto builder = h.hello("builder", 2);
  h.deliver(7, "ev.a.x");
  const auto sent = h.msgs(builder);
  REQUIRE(sent.size() == 1);
  h.send(builder, "NAK " + std::to_string(sent[0].id) + " - database down\r\n");
  const auto frames = h.read(builder);
  REQUIRE_FALSE(frames.empty());
  CHECK(frames.back().kind == proto::Frame::Kind::kErr);
  CHECK(h.closed(builder));
}

TEST_CASE(
    "dispatcher: an ACK held for a tied publish that fails becomes a NAK with jetfan's reason, down to the dead letter",
    "[unit]") {
  Config c = redrive_config();  // builder: 2 attempts, then the dead letter
  c.handlers[0].publish = PublishSettings{{"out.>"}};
  Harness h(c);
  h.checking = false;  // the checker does not model an ACK that turns into a failure
  const auto builder = h.hello("builder", 3);
  h.deliver(7, "ev.a.x");
  for (int attempt = 1; attempt <= 2; ++attempt) {
    if (attempt == 2) {
      h.advance(milliseconds(150));
      h.deliver(7, "ev.a.x", 2);  // the server's redelivery
    }
    const auto sent = h.msgs(builder);
    REQUIRE(sent.size() == 1);
    const std::string id = std::to_string(sent[0].id);
    h.send(builder, "PUB 1 out.made 0 1 " + id + " 0\r\nx\r\nACK " + id + "\r\n");
    REQUIRE(h.upstream.published.size() == static_cast<std::size_t>(attempt));
    PublishResult refused;
    refused.error = "maximum messages exceeded";
    h.upstream.publish_answer(h.upstream.published.back().id, refused);
    h.pump();
  }
  // The second failure used up builder's attempts: its dead letter names the tied publish.
  REQUIRE(h.upstream.published.size() == 3);
  CHECK(h.upstream.published[2].subject == "dlq.builder");
  CHECK(h.upstream.published[2].headers.find(
            "last: nak: jetfan made its ACK a NAK: the tied publish of request 1 failed: refused") !=
        std::string::npos);
}

TEST_CASE("dispatcher: what a tied publish came to is not kept for a delivery whose ack_timeout passed", "[unit]") {
  auto c = config({handler("builder", {"a.*"})});
  c.handlers[0].ack_timeout = milliseconds(1000);
  c.handlers[0].publish = PublishSettings{{"out.>"}};
  Harness h(std::move(c));
  const auto builder = h.hello("builder", 3);
  h.deliver(7, "ev.a.x");
  auto sent = h.msgs(builder);
  REQUIRE(sent.size() == 1);
  const std::string first = std::to_string(sent[0].id);
  SECTION("the publish failed before the delivery timed out") {
    h.send(builder, "PUB 1 out.made 0 1 " + first + " 0\r\nx\r\n");
    PublishResult refused;
    refused.error = "maximum messages exceeded";
    h.upstream.publish_answer(h.upstream.published.back().id, refused);
    h.pump();
    CHECK(h.dispatcher().publisher().ties() == 1);  // kept for the ACK to come
    h.advance(milliseconds(1100));
  }
  SECTION("the delivery timed out before the publish failed") {
    h.send(builder, "PUB 1 out.made 0 1 " + first + " 0\r\nx\r\n");
    h.advance(milliseconds(1100));
    PublishResult refused;
    refused.error = "maximum messages exceeded";
    h.upstream.publish_answer(h.upstream.published.back().id, refused);
    h.pump();
  }
  CHECK(h.replied(Kind::kNak) == std::vector<std::uint64_t>{7});  // the ack_timeout passed
  CHECK(h.dispatcher().publisher().ties() == 0);
}
