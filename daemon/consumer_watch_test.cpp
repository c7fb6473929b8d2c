// ConsumerWatch on a FakeUpstream: when it asks, what it keeps, and whom it answers.

#include <catch2/catch.hpp>

#include "consumer_watch.hpp"
#include "fake_upstream.hpp"

using namespace jetfan;
using std::chrono::milliseconds;

namespace {

Config config() {
  Config c;
  c.consumer.stream = "EVENTS";
  c.consumer.durable = "builder";
  return c;
}

const std::string kInfo =
    R"({"type":"io.nats.jetstream.api.v1.consumer_info_response","stream_name":"EVENTS","name":"builder",)"
    R"("config":{"durable_name":"builder","ack_policy":"explicit","ack_wait":30000000000,"max_deliver":-1,)"
    R"("max_ack_pending":1000},"delivered":{"consumer_seq":9,"stream_seq":12},"ack_floor":{"consumer_seq":7,)"
    R"("stream_seq":10},"num_ack_pending":2,"num_redelivered":1,"num_waiting":3,"num_pending":40})";

struct Watched {
  MessageBytesArena arena;
  FakeUpstream upstream{arena, ""};
  Config c = config();
  ConsumerWatch watch{c, upstream};
  TimePoint t0{};
};

}  // namespace

TEST_CASE("the watch polls the consumer's info every kPollEvery, one poll at a time", "[unit]") {
  Watched w;
  w.watch.tick(w.t0);
  REQUIRE(w.upstream.consumer_info_requests.size() == 1);
  CHECK(w.upstream.consumer_info_requests[0].subject == "$JS.API.CONSUMER.INFO.EVENTS.builder");
  CHECK(w.upstream.consumer_info_requests[0].body.empty());
  CHECK(ConsumerWatch::owns(w.upstream.consumer_info_requests[0].id));
  w.watch.tick(w.t0 + ConsumerWatch::kPollEvery - milliseconds(1));
  CHECK(w.upstream.consumer_info_requests.size() == 1);
  w.watch.tick(w.t0 + ConsumerWatch::kPollEvery);
  CHECK(w.upstream.consumer_info_requests.size() == 2);
}

TEST_CASE("the watch keeps the last answer for status and metrics until it is stale", "[unit]") {
  Watched w;
  w.watch.tick(w.t0);
  w.watch.on_reply(w.upstream.consumer_info_requests[0].id, ApiReply{kInfo, {}}, w.t0 + milliseconds(3));
  StatusSnapshot s;
  w.watch.fill(s, w.t0 + milliseconds(1003));
  REQUIRE(s.polled);
  CHECK(s.polled->num_waiting == 3);
  CHECK(s.polled->delivered_stream_seq == 12);
  CHECK(s.polled->ack_floor_stream_seq == 10);
  CHECK(s.polled->max_ack_pending == 1000);
  CHECK(s.polled_age_seconds == Approx(1.0));
  REQUIRE(w.watch.last());
  CHECK(w.watch.last()->delivered.consumer_seq == 9);

  StatusSnapshot stale;
  w.watch.fill(stale, w.t0 + milliseconds(3) + ConsumerWatch::kStale + milliseconds(1));
  CHECK_FALSE(stale.polled);
}

TEST_CASE("an answer asked for goes to the sink with its token and a poll's does not", "[unit]") {
  Watched w;
  std::vector<std::pair<std::uint64_t, ConsumerAnswer>> answers;
  w.watch.set_sink([&](std::uint64_t token, const ConsumerAnswer& answer) { answers.emplace_back(token, answer); });
  w.watch.tick(w.t0);
  REQUIRE(w.watch.ask(41));
  REQUIRE(w.watch.ask(42));
  REQUIRE(w.upstream.consumer_info_requests.size() == 3);
  const auto& asked = w.upstream.consumer_info_requests;
  w.watch.on_reply(asked[0].id, ApiReply{kInfo, {}}, w.t0);  // the poll
  CHECK(answers.empty());
  w.watch.on_reply(asked[2].id, ApiReply{{}, "no responders"}, w.t0);
  w.watch.on_reply(asked[1].id,
                   ApiReply{R"({"error":{"code":404,"err_code":10014,"description":"consumer not found"}})", {}}, w.t0);
  REQUIRE(answers.size() == 2);
  CHECK(answers[0].first == 42);
  CHECK(std::get<std::string>(answers[0].second) == "no responders");
  CHECK(answers[1].first == 41);
  CHECK_THAT(std::get<std::string>(answers[1].second), Catch::Contains("consumer not found"));
  // Answered once: a second answer to the same request goes nowhere.
  w.watch.on_reply(asked[1].id, ApiReply{kInfo, {}}, w.t0);
  CHECK(answers.size() == 2);
}

TEST_CASE("the watch cannot ask without a connection", "[unit]") {
  Watched w;
  w.upstream.close(Duration(0));
  CHECK_FALSE(w.watch.ask(1));
}
