// ReaderHealth through the real Dispatcher: a lost connection, another reader of the durable and a
// consumer that is gone make jetfan not ready, with the reason in its status, and
// consumer.on_other_reader: exit stops it.

#include <catch2/catch.hpp>

#include "dispatcher_harness.hpp"
#include "startup_error.hpp"

using namespace jetfan;
using namespace jetfan::testing;

namespace {

std::string info(std::uint64_t delivered_consumer_seq, std::uint64_t num_waiting) {
  return R"({"stream_name":"STREAM","name":"CONSUMER","config":{"durable_name":"CONSUMER","ack_policy":"explicit"},)"
         R"("delivered":{"consumer_seq":)" +
         std::to_string(delivered_consumer_seq) +
         R"(,"stream_seq":0},"ack_floor":{"consumer_seq":0,"stream_seq":0},)"
         R"("num_ack_pending":0,"num_redelivered":0,"num_waiting":)" +
         std::to_string(num_waiting) + R"(,"num_pending":0})";
}

// What a server does around the dispatcher while time passes: each pull request gets its idle
// heartbeat while it waits and 408 when it expires, and each consumer info request its answer.
class Server {
 public:
  explicit Server(Harness& h) : h_(h) {}

  // Moves time on by `seconds`, answering each consumer info request with what `answer` says then.
  template <typename Answer>
  void run_for(int seconds, Answer answer) {
    for (int tick = 0; tick < seconds * 2; ++tick) {
      serve_pulls();
      h_.advance(milliseconds(500));
      auto& asked = h_.upstream.consumer_info_requests;
      for (; answered_ < asked.size(); ++answered_) h_.upstream.api_answer(asked[answered_].id, answer());
      h_.pump();
    }
  }

 private:
  void serve_pulls() {
    for (std::size_t i = sent_.size(); i < h_.upstream.pulls.size(); ++i) {
      sent_.emplace_back(h_.upstream.pulls[i].id, h_.time.now());
    }
    for (auto& [id, at] : sent_) {
      if (id == 0) continue;
      if (h_.time.now() - at >= milliseconds(5000)) {
        h_.upstream.status(id, "408", "Request Timeout");
        id = 0;
      } else {
        h_.upstream.status(id, "100", "Idle Heartbeat");
      }
    }
  }

  Harness& h_;
  std::vector<std::pair<std::uint64_t, TimePoint>> sent_;  // pull request, when; id 0: ended
  std::size_t answered_ = 0;
};

}  // namespace

TEST_CASE("reader health: a lost connection is not ready only after the grace, and ready again once back", "[unit]") {
  Harness h(config({handler("builder", {"a.>"})}));
  h.hello("builder");
  h.upstream.disconnect("Connection refused");
  auto status = h.status();
  CHECK_FALSE(status.nats_connected);
  CHECK(status.nats_last_disconnect == "Connection refused");
  CHECK(status.ready);
  CHECK(h.dispatcher().not_consuming().empty());
  h.advance(milliseconds(10500));
  status = h.status();
  CHECK_FALSE(status.ready);
  REQUIRE(status.not_consuming.size() == 1);
  CHECK_THAT(status.not_consuming[0], Catch::StartsWith("not connected to NATS for 10s (Connection refused)"));
  CHECK(h.dispatcher().not_consuming() == status.not_consuming);
  h.upstream.reconnect();
  status = h.status();
  CHECK(status.nats_connected);
  CHECK(status.ready);
}

TEST_CASE("reader health: pull requests of another reader make jetfan not ready, naming the durable", "[unit]") {
  Harness h(config({handler("builder", {"a.>"})}));
  h.hello("builder");
  // The server shows one more waiting request than jetfan has outstanding.
  Server(h).run_for(10, [&] { return info(0, h.status().pulls_outstanding + 1); });
  const auto status = h.status();
  CHECK(status.other_reader);
  CHECK_FALSE(status.ready);
  REQUIRE(status.not_consuming.size() == 1);
  CHECK_THAT(status.not_consuming[0],
             Catch::StartsWith("another client reads consumer \"CONSUMER\" of stream \"STREAM\": 1 pull request(s)"));
  CHECK(h.dispatcher().serving());  // on_other_reader: warn goes on
  CHECK(h.dispatcher().exit_code() == 0);
}

TEST_CASE("reader health: a lone jetfan whose requests are all it sees stays ready", "[unit]") {
  Harness h(config({handler("builder", {"a.>"})}));
  h.hello("builder");
  std::uint64_t seq = 0;
  Server(h).run_for(20, [&] {
    h.deliver(++seq, "ev.a.x");
    return info(h.upstream.delivered_consumer_seq(), h.status().pulls_outstanding);
  });
  CHECK_FALSE(h.status().other_reader);
  CHECK(h.status().ready);
}

TEST_CASE("reader health: a request the server counted, then filled before its answer came, is jetfan's own",
          "[unit]") {
  Config c = config({handler("builder", {"a.>"})});
  c.consumer.batch = 4;
  c.consumer.max_held = 4;
  Harness h(std::move(c));
  const auto peer = h.hello("builder");
  std::uint64_t seq = 0;
  std::size_t answered = 0;
  for (int cycle = 0; cycle < 10; ++cycle) {
    for (const auto& pull : h.upstream.pulls) h.upstream.status(pull.id, "100", "Idle Heartbeat");
    h.advance(milliseconds(2000));  // a poll goes out
    // The server counts jetfan's requests waiting, then fills the oldest before it answers: the
    // answer comes after the messages, and jetfan, full, sends no request in its place.
    const std::size_t waiting = h.status().pulls_outstanding;
    REQUIRE(waiting == 1);
    for (int i = 0; i < 4; ++i) h.deliver(++seq, "ev.a.x");
    REQUIRE(h.status().pulls_outstanding == 0);
    auto& asked = h.upstream.consumer_info_requests;
    for (; answered < asked.size(); ++answered) {
      h.upstream.api_answer(asked[answered].id, info(h.upstream.delivered_consumer_seq(), waiting));
    }
    h.pump();
    for (const auto& msg : h.msgs(peer)) h.send(peer, "ACK " + std::to_string(msg.id) + "\r\n");
  }
  CHECK(answered >= 9);
  CHECK_FALSE(h.status().other_reader);
  CHECK(h.status().ready);
}

TEST_CASE("reader health: deliveries that never arrived are another reader's", "[unit]") {
  Harness h(config({handler("builder", {"a.>"})}));
  h.hello("builder");
  std::uint64_t seq = 0;
  Server(h).run_for(10, [&] {
    h.upstream.lose(1);  // the other reader took one
    h.deliver(++seq, "ev.a.x");
    return info(h.upstream.delivered_consumer_seq(), h.status().pulls_outstanding);
  });
  const auto status = h.status();
  CHECK(status.other_reader);
  REQUIRE_FALSE(status.not_consuming.empty());
  CHECK_THAT(status.not_consuming[0], Catch::Contains("of its deliveries went to another client"));
}

TEST_CASE("reader health: with on_other_reader exit, another reader stops jetfan with 78", "[unit]") {
  Config c = config({handler("builder", {"a.>"})});
  c.consumer.on_other_reader = OtherReaderAction::kExit;
  Harness h(std::move(c));
  h.hello("builder");
  Server(h).run_for(10, [&] { return info(0, h.status().pulls_outstanding + 1); });
  CHECK(h.dispatcher().exit_code() == kExitConfig);
  CHECK_FALSE(h.dispatcher().serving());
  CHECK(h.finished);
}

TEST_CASE("reader health: a consumer gone after start is a problem at once, and clears when it is back", "[unit]") {
  Harness h(config({handler("builder", {"a.>"})}));
  h.hello("builder");
  Server server(h);
  server.run_for(
      2, [] { return std::string(R"({"error":{"code":404,"err_code":10014,"description":"consumer not found"}})"); });
  auto status = h.status();
  CHECK_FALSE(status.ready);
  REQUIRE(status.not_consuming.size() == 1);
  CHECK_THAT(status.not_consuming[0], Catch::Contains("consumer not found"));
  server.run_for(2, [&] { return info(0, 0); });
  CHECK(h.status().ready);
}
