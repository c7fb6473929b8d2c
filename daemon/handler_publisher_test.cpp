// HandlerPublisher against a FakeUpstream: the order of its refusals, the server's answers turned
// into PUBOK and PUBERR, timeouts, the per-connection bounds, and tied publishes' Nats-Msg-Id and
// held ACKs.

#include <catch2/catch.hpp>

#include "fake_upstream.hpp"
#include "handler_publisher.hpp"

using namespace jetfan;
using proto::PublishError;

namespace {

struct Bench {
  MessageBytesArena arena;
  FakeUpstream upstream{arena, "events."};
  HandlerPublisher publisher{upstream};
  std::optional<PublishSettings> settings = PublishSettings{{"out.>", "audit.*"}, 2, 100, Duration(1000)};
  TimePoint now{};

  std::optional<PublishReply> pub(ConnectionId connection, std::uint64_t request, std::string subject,
                                  std::string payload = "x", std::optional<std::uint64_t> tied_to = std::nullopt,
                                  std::optional<std::uint64_t> tied_seq = std::nullopt, std::string headers = "") {
    proto::Command c;
    c.verb = proto::Verb::kPub;
    c.id = request;
    c.subject = std::move(subject);
    c.headers = std::move(headers);
    c.payload = std::move(payload);
    c.tied_to = tied_to;
    return publisher.publish(connection, "builder", settings, c, tied_seq, "jetfan:EVENTS:d:7:builder:0", now);
  }
  PublishResult stored(std::uint64_t seq, bool duplicate = false) {
    PublishResult r;
    r.stored = true;
    r.stream = "OUT";
    r.stream_seq = seq;
    r.duplicate = duplicate;
    return r;
  }
};

}  // namespace

TEST_CASE("handler publisher: what is wrong with a PUB comes first, then whether the handler may send it", "[unit]") {
  Bench b;
  CHECK(b.pub(1, 1, "a..b")->code == PublishError::kBadSubject);
  CHECK(b.pub(1, 1, "out.x", "x", std::nullopt, std::nullopt, "A: 1\r\n\r\n")->code == PublishError::kBadHeaders);
  CHECK(b.pub(1, 1, "out.x", "x", 9, std::nullopt)->code == PublishError::kNotInFlight);
  const auto elsewhere = b.pub(1, 1, "other.x");
  CHECK(elsewhere->code == PublishError::kNotAllowed);
  CHECK(elsewhere->reason ==
        "handler \"builder\" may not publish to \"other.x\": its publish.subjects are out.>, audit.*");
  b.settings.reset();
  CHECK(b.pub(1, 1, "out.x")->reason ==
        "handler \"builder\" may not publish: it has no publish.subjects in jetfan's config");
  CHECK(b.upstream.published.empty());
  CHECK(b.publisher.stats().at("builder").refused == 5);
}

TEST_CASE("handler publisher: the server's answers become PUBOK or PUBERR, no answer in time a timeout", "[unit]") {
  Bench b;
  REQUIRE_FALSE(b.pub(1, 10, "out.a", "one"));
  REQUIRE_FALSE(b.pub(1, 11, "audit.x", "two"));
  REQUIRE(b.upstream.published.size() == 2);
  CHECK(b.upstream.published[0].subject == "out.a");
  CHECK(b.upstream.published[0].payload == "one");
  CHECK(b.upstream.published[0].headers.empty());
  CHECK(HandlerPublisher::owns(b.upstream.published[0].id));
  CHECK(b.pub(1, 10, "out.b")->code == PublishError::kBusyId);  // request 10 still waits

  const auto ok = b.publisher.on_published(b.upstream.published[0].id, b.stored(42, true), b.now);
  REQUIRE(ok);
  CHECK((ok->stored && ok->request == 10 && ok->stream == "OUT" && ok->seq == 42 && ok->duplicate));
  PublishResult none;
  none.no_stream = true;
  none.error = "no stream captures the subject";
  const auto missing = b.publisher.on_published(b.upstream.published[1].id, none, b.now);
  CHECK((!missing->stored && missing->code == PublishError::kNoStream && missing->request == 11));
  CHECK_FALSE(b.publisher.on_published(b.upstream.published[1].id, b.stored(1), b.now));  // answered already

  REQUIRE_FALSE(b.pub(1, 12, "out.c"));
  CHECK(b.publisher.stats().at("builder").in_flight == 1);
  CHECK(b.publisher.next_deadline() == b.now + Duration(1000));
  CHECK(b.publisher.time_out(b.now + Duration(999)).empty());
  const auto late = b.publisher.time_out(b.now + Duration(1000));
  REQUIRE(late.size() == 1);
  CHECK((late[0].request == 12 && late[0].code == PublishError::kTimeout));
  CHECK_FALSE(b.publisher.on_published(b.upstream.published[2].id, b.stored(43), b.now));  // too late: already answered
  const PublishStats& stats = b.publisher.stats().at("builder");
  CHECK((stats.stored == 0 && stats.duplicates == 1 && stats.failed == 1 && stats.timed_out == 1));
  CHECK(stats.in_flight == 0);
  CHECK(stats.latency.count() == 2);  // the two the server answered
}

TEST_CASE("handler publisher: a connection is full at max_in_flight publishes or max_bytes waiting", "[unit]") {
  Bench b;
  REQUIRE_FALSE(b.pub(1, 1, "out.a", std::string(10, 'x')));
  CHECK_FALSE(b.publisher.full(1, *b.settings));
  REQUIRE_FALSE(b.pub(1, 2, "out.a", std::string(10, 'x')));
  CHECK(b.publisher.full(1, *b.settings));  // 2 publishes
  CHECK_FALSE(b.publisher.full(2, *b.settings));
  b.publisher.on_published(b.upstream.published[0].id, b.stored(1), b.now);
  CHECK_FALSE(b.publisher.full(1, *b.settings));
  REQUIRE_FALSE(b.pub(2, 1, "out.a", std::string(100, 'x')));
  CHECK(b.publisher.full(2, *b.settings));  // 100 bytes
  CHECK(b.publisher.waiting() == 2);
  b.publisher.forget(2);
  CHECK(b.publisher.waiting(2) == 0);
  CHECK_FALSE(b.publisher.on_published(b.upstream.published[2].id, b.stored(2), b.now));  // its connection went
}

TEST_CASE("handler publisher: a tied publish carries jetfan's Nats-Msg-Id, and its delivery's ACK waits for it",
          "[unit]") {
  Bench b;
  REQUIRE_FALSE(b.pub(1, 1, "out.a", "x", 5, 7, "NATS/1.0\r\nNats-Msg-Id: mine\r\nA: 1\r\n\r\n"));
  CHECK(b.upstream.published[0].headers == "NATS/1.0\r\nA: 1\r\nNats-Msg-Id: jetfan:EVENTS:d:7:builder:0\r\n\r\n");
  REQUIRE_FALSE(b.pub(1, 2, "out.b", "y", 5, 7));
  CHECK(b.upstream.published[1].headers == "NATS/1.0\r\nNats-Msg-Id: jetfan:EVENTS:d:7:builder:0\r\n\r\n");

  CHECK_FALSE(b.publisher.hold_ack(1, 6));  // nothing tied to delivery 6: it counts at once
  CHECK(b.publisher.hold_ack(1, 5));
  b.publisher.on_published(b.upstream.published[0].id, b.stored(1), b.now);
  CHECK(b.publisher.released().empty());  // one still waits
  b.publisher.on_published(b.upstream.published[1].id, b.stored(2), b.now);
  const auto released = b.publisher.released();
  REQUIRE(released.size() == 1);
  CHECK((released[0].connection == 1 && released[0].delivery == 5 && released[0].failed.empty()));
  CHECK_FALSE(b.publisher.hold_ack(1, 5));  // nothing waits any more

  SECTION("a failed tied publish turns the held ACK into a failure") {
    REQUIRE_FALSE(b.pub(1, 3, "out.c", "z", 8, 9));
    CHECK(b.publisher.hold_ack(1, 8));
    CHECK(b.publisher.time_out(b.now + Duration(1000)).size() == 1);
    const auto failed = b.publisher.released();
    REQUIRE(failed.size() == 1);
    CHECK_THAT(failed[0].failed, Catch::Contains("of request 3 failed: timeout"));
  }
  SECTION("a tied publish that failed before the ACK came fails the ACK when it comes") {
    REQUIRE_FALSE(b.pub(1, 3, "out.c", "z", 8, 9));
    PublishResult refused;
    refused.error = "maximum messages exceeded";
    b.publisher.on_published(b.upstream.published[2].id, refused, b.now);
    CHECK(b.publisher.released().empty());
    CHECK(b.publisher.hold_ack(1, 8));
    const auto failed = b.publisher.released();
    REQUIRE(failed.size() == 1);
    CHECK_THAT(failed[0].failed, Catch::Contains("refused maximum messages exceeded"));
  }
  SECTION("a tied publish jetfan refuses at once fails the ACK as one the server refused") {
    const auto refused = b.pub(1, 3, "other.x", "z", 8, 9);  // not in its publish.subjects
    REQUIRE(refused);
    CHECK(refused->code == PublishError::kNotAllowed);
    CHECK(b.publisher.hold_ack(1, 8));
    const auto failed = b.publisher.released();
    REQUIRE(failed.size() == 1);
    CHECK_THAT(failed[0].failed, Catch::Contains("request 3 failed: not-allowed"));
    CHECK_FALSE(b.publisher.hold_ack(1, 8));  // settled: a second ACK is the core's to judge
  }
  SECTION("a tied PUB naming a delivery not in flight leaves nothing behind") {
    REQUIRE(b.pub(1, 3, "out.c", "z", 8, std::nullopt)->code == PublishError::kNotInFlight);
    CHECK_FALSE(b.publisher.hold_ack(1, 8));
  }
  SECTION("a held ACK goes with its connection") {
    REQUIRE_FALSE(b.pub(1, 3, "out.c", "z", 8, 9));
    CHECK(b.publisher.hold_ack(1, 8));
    b.publisher.forget(1);
    CHECK(b.publisher.time_out(b.now + Duration(5000)).empty());
    CHECK(b.publisher.released().empty());
  }
}

TEST_CASE("handler publisher: the Nats-Msg-Id of a tied publish names the input, the handler and the index", "[unit]") {
  CHECK(tied_msg_id("EVENTS", "node1_builder", 42, "builder", 3) == "jetfan:EVENTS:node1_builder:42:builder:3");
  CHECK(with_msg_id("", "m") == "NATS/1.0\r\nNats-Msg-Id: m\r\n\r\n");
  CHECK(with_msg_id("NATS/1.0\r\n\r\n", "m") == "NATS/1.0\r\nNats-Msg-Id: m\r\n\r\n");
  CHECK(with_msg_id("NATS/1.0\r\nnats-msg-id: a\r\nB: 2\r\nNATS-MSG-ID: b\r\n\r\n", "m") ==
        "NATS/1.0\r\nB: 2\r\nNats-Msg-Id: m\r\n\r\n");
}
