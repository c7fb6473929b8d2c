// UnreadableMessages through the real Dispatcher: after the connection broke with deliveries that
// never reached jetfan, the message with a subject the client cannot read is found by reading the
// stream, terminated on an ack subject made by hand, and what the break took is handed back.

#include <catch2/catch.hpp>

#include "dispatcher_harness.hpp"

using namespace jetfan;
using namespace jetfan::testing;

namespace {

std::string info(std::uint64_t delivered_consumer_seq, std::uint64_t delivered_stream_seq, std::uint64_t floor) {
  return R"({"stream_name":"STREAM","name":"CONSUMER","config":{"durable_name":"CONSUMER","ack_policy":"explicit"},)"
         R"("delivered":{"consumer_seq":)" +
         std::to_string(delivered_consumer_seq) + R"(,"stream_seq":)" + std::to_string(delivered_stream_seq) +
         R"(},"ack_floor":{"consumer_seq":)" + std::to_string(floor) + R"(,"stream_seq":)" + std::to_string(floor) +
         R"(},"num_ack_pending":0,"num_redelivered":0,"num_waiting":0,"num_pending":0})";
}

// MSG.GET's answer for a message at `seq` on `subject` (JSON-escaped already), payload "bad".
std::string stored(std::uint64_t seq, const std::string& subject_json) {
  return R"({"type":"io.nats.jetstream.api.v1.stream_msg_get_response","message":{"subject":")" + subject_json +
         R"(","seq":)" + std::to_string(seq) + R"(,"data":"YmFk","time":"2026-01-01T00:00:00Z"}})";
}

// Answers every consumer info request not yet answered with `json`.
void answer_infos(Harness& h, const std::string& json, std::size_t& answered) {
  auto& asked = h.upstream.consumer_info_requests;
  for (; answered < asked.size(); ++answered) h.upstream.api_answer(asked[answered].id, json);
  h.pump();
}

}  // namespace

TEST_CASE("unreadable subject: found after the break, terminated by hand, what the break took handed back", "[unit]") {
  Harness h(config({handler("builder", {"a.>"})}));
  const auto peer = h.hello("builder");
  for (std::uint64_t seq = 1; seq <= 3; ++seq) h.deliver(seq, "ev.a.x");
  REQUIRE(h.msgs(peer).size() == 3);  // held, in flight
  // Delivery 4 (stream seq 4) broke the connection; 5-7 came in the same read and went with it.
  h.upstream.lose(4);
  h.upstream.disconnect(kProtocolError);
  h.upstream.reconnect();
  // The consumer's info is asked for at once after the reconnect.
  REQUIRE_FALSE(h.upstream.consumer_info_requests.empty());
  std::size_t answered = 0;
  answer_infos(h, info(7, 7, 0), answered);
  REQUIRE(h.upstream.api_requests.size() == 1);
  CHECK(h.upstream.api_requests[0].subject == "$JS.API.STREAM.MSG.GET.STREAM");
  CHECK(h.upstream.api_requests[0].body == R"({"next_by_subj":">","seq":4})");
  h.upstream.api_answer(h.upstream.api_requests[0].id, stored(4, "ev.a\\rb"));
  h.pump();
  CHECK(h.replied(FakeUpstream::Reply::Kind::kTerm) == std::vector<std::uint64_t>{4});
  // 1-3 are held (in flight to the handler): only the deliveries jetfan never got are handed back.
  CHECK(h.replied(FakeUpstream::Reply::Kind::kNak) == std::vector<std::uint64_t>{5, 6, 7});
  CHECK(h.msgs(peer).empty());  // the handler is never given it
  const auto status = h.status();
  REQUIRE(status.unreadable.size() == 1);
  CHECK(status.unreadable[0].stream_seq == 4);
  CHECK(status.unreadable[0].subject == "ev.a\\rb");
  CHECK(status.unreadable[0].handed_back == 3);
  CHECK(status.unreadable_total == 1);
  CHECK(status.totals.unroutable == 1);
}

TEST_CASE("unreadable subject: a break that lost nothing reads nothing", "[unit]") {
  Harness h(config({handler("builder", {"a.>"})}));
  h.hello("builder");
  h.deliver(1, "ev.a.x");
  h.upstream.disconnect(kProtocolError);
  h.upstream.reconnect();
  h.deliver(2, "ev.a.x");  // the next delivery came: nothing went with the connection
  std::size_t answered = 0;
  answer_infos(h, info(2, 2, 0), answered);
  CHECK(h.upstream.api_requests.empty());
  CHECK(h.replied(FakeUpstream::Reply::Kind::kTerm).empty());
  CHECK(h.status().unreadable.empty());
}

TEST_CASE("unreadable subject: readable messages in reach are not taken for it", "[unit]") {
  Harness h(config({handler("builder", {"a.>"})}));
  h.hello("builder");
  h.deliver(1, "ev.a.x");
  h.upstream.lose(1);
  h.upstream.disconnect(kProtocolError);
  h.upstream.reconnect();
  std::size_t answered = 0;
  answer_infos(h, info(2, 2, 0), answered);
  REQUIRE(h.upstream.api_requests.size() == 1);
  h.upstream.api_answer(h.upstream.api_requests[0].id, stored(2, "ev.a.y"));
  h.pump();
  // (1, 2] is read; (0, 1] next: 1 is readable too.
  REQUIRE(h.upstream.api_requests.size() == 2);
  h.upstream.api_answer(h.upstream.api_requests[1].id, stored(1, "ev.a.x"));
  h.pump();
  CHECK(h.upstream.api_requests.size() == 2);
  CHECK(h.replied(FakeUpstream::Reply::Kind::kTerm).empty());
  CHECK(h.replied(FakeUpstream::Reply::Kind::kNak).empty());
  CHECK(h.status().unreadable.empty());
}

namespace {

// A break at stream seq 2 (delivery 2) with nothing else lost, the culprit read and found.
void break_at_two(Harness& h) {
  h.deliver(1, "ev.a.x");
  h.upstream.lose(1);
  h.upstream.disconnect(kProtocolError);
  h.upstream.reconnect();
  std::size_t answered = 0;
  answer_infos(h, info(2, 2, 1), answered);
  REQUIRE(h.upstream.api_requests.size() == 1);
  h.upstream.api_answer(h.upstream.api_requests[0].id, stored(2, "ev.a.x\\ry"));
  h.pump();
}

Config with_dead_letters() {
  HandlerSettings builder = handler("builder", {"a.>"});
  builder.dead_letter_subject = "dlq.builder";
  return config({builder, handler("other", {"b.>"})});
}

}  // namespace

TEST_CASE("unreadable subject: a matching handler with dead letters gets one first, then it is terminated", "[unit]") {
  Harness h(with_dead_letters());
  h.hello("builder");
  break_at_two(h);
  REQUIRE(h.upstream.published.size() == 1);  // builder's; "other" does not match
  const auto& letter = h.upstream.published[0];
  CHECK(letter.subject == "dlq.builder");
  CHECK(letter.payload == "bad");
  CHECK_THAT(letter.headers, Catch::Contains("Jetfan-Subject: ev.a.x\\ry\r\n"));
  CHECK_THAT(letter.headers, Catch::Contains("Jetfan-Sequence: 2\r\n"));
  CHECK_THAT(letter.headers, Catch::Contains("Jetfan-Reason: unreadable subject"));
  CHECK(h.replied(FakeUpstream::Reply::Kind::kTerm).empty());  // not before the dead letter is stored
  CHECK(h.status().unreadable.at(0).outcome == "dead-lettering");
  h.upstream.publish_answer(letter.id, PublishResult{true, 7, "DLQ", {}});
  h.pump();
  CHECK(h.replied(FakeUpstream::Reply::Kind::kTerm) == std::vector<std::uint64_t>{2});
  CHECK(h.status().unreadable.at(0).outcome == "dead-lettered for builder; terminated");
}

TEST_CASE("unreadable subject: a dead letter not stored leaves it unterminated, for its next delivery", "[unit]") {
  Harness h(with_dead_letters());
  h.hello("builder");
  break_at_two(h);
  REQUIRE(h.upstream.published.size() == 1);
  h.upstream.publish_answer(h.upstream.published[0].id, PublishResult{false, 0, {}, "no stream captures it"});
  h.pump();
  CHECK(h.replied(FakeUpstream::Reply::Kind::kTerm).empty());
  CHECK_THAT(h.status().unreadable.at(0).outcome,
             Catch::StartsWith("not terminated: dead letter not stored for builder"));
}

TEST_CASE("unreadable subject: a dead letter unanswered when the connection comes back counts as not stored",
          "[unit]") {
  Harness h(with_dead_letters());
  h.hello("builder");
  break_at_two(h);
  REQUIRE(h.upstream.published.size() == 1);
  h.upstream.disconnect("Connection reset");
  h.upstream.reconnect();
  h.upstream.publish_answer(h.upstream.published[0].id, PublishResult{true, 7, "DLQ", {}});  // too late
  h.pump();
  CHECK(h.replied(FakeUpstream::Reply::Kind::kTerm).empty());
  CHECK_THAT(h.status().unreadable.at(0).outcome, Catch::StartsWith("not terminated"));
}

TEST_CASE("unreadable subject: a connection lost for another reason is no message's doing", "[unit]") {
  Harness h(config({handler("builder", {"a.>"})}));
  h.hello("builder");
  h.deliver(1, "ev.a.x");
  h.upstream.lose(3);
  h.upstream.disconnect("Connection reset by peer");
  h.upstream.reconnect();
  std::size_t answered = 0;
  answer_infos(h, info(4, 4, 0), answered);
  CHECK(h.upstream.api_requests.empty());
}
