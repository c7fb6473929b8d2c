// DispatchLog on its own: the events, their facts and their words, captured (LogCapture).

#include "dispatch_log.hpp"

#include <unistd.h>

#include <catch2/catch.hpp>

#include <memory>

#include "logging.hpp"
#include "test_sessions.hpp"

using namespace jetfan;

namespace {

struct World {
  World() {
    HandlerSettings audit;
    audit.name = "audit";
    audit.patterns = {">"};
    HandlerSettings ordered = audit;
    ordered.name = "ledger";
    ordered.order_by = OrderBy{OrderBy::Kind::kHeader, 0, "Account"};
    config.handlers = {audit, ordered};
    config.key.strip_prefix = "ev.";
    config.socket.path = "/run/jetfan/test.sock";
    MessageParts parts;
    parts.subject = "ev.orders.created";
    parts.reply = "$JS.ACK.S.C.1.42.7.0.0";
    parts.payload = "x";
    stored.message = make_message_bytes(std::move(parts), arena);
    stored.key = "orders.created";
    stored.stream_seq = 42;
    stored.deliveries = 3;
  }
  std::shared_ptr<HandlerSession> session(std::size_t handler) {
    auto made = sessions.make();
    made->admit(handler, config.handlers[handler].name, 1, HandlerSession::kDefaultMaxPublishBody);
    return made;
  }

  Config config;
  MessageBytesArena arena;
  HeldMessage stored;
  RateLimitedLog warnings{2, std::chrono::milliseconds(10000)};
  DispatchLog log{config, warnings};
  testing::Sessions sessions;
};

std::string text(const LogField::Value* value) {
  REQUIRE(value != nullptr);
  return std::visit(
      [](const auto& v) -> std::string {
        if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::string>) {
          return v;
        } else {
          return std::to_string(v);
        }
      },
      *value);
}

// The core's kFailed of delivery 5 on connection 9.
Effect failed_effect(FailCause cause) {
  Effect effect{Effect::Kind::kFailed};
  effect.connection = 9;
  effect.delivery = 5;
  effect.cause = cause;
  return effect;
}

}  // namespace

TEST_CASE("a failed delivery names handler, connection, message and cause, and says what happens to it", "[unit]") {
  World w;
  LogCapture capture;
  const Effect effect = failed_effect(FailCause::kTimeout);
  const TimePoint now{};
  const auto session = w.session(0);

  w.log.failed(effect, w.stored, session.get(), false, "", now);
  w.log.failed(effect, w.stored, nullptr, true, "", now + std::chrono::milliseconds(1));
  const auto events = capture.named("delivery.failed");
  REQUIRE(events.size() == 2);
  CHECK(events[0].level == spdlog::level::warn);
  CHECK(text(events[0].field("handler")) == "audit");
  CHECK(text(events[0].field("connection")) == "9");
  CHECK(text(events[0].field("seq")) == "42");
  CHECK(text(events[0].field("key")) == "orders.created");
  CHECK(text(events[0].field("deliveries")) == "3");
  CHECK(text(events[0].field("reason")) == to_string(FailCause::kTimeout));
  CHECK_THAT(events[0].message, Catch::Contains("stream seq 42") && Catch::Contains("ev.orders.created") &&
                                    Catch::Contains("goes back to the server"));
  // The connection is gone: the handler is "?", and an ordered one keeps the message.
  CHECK(text(events[1].field("handler")) == "?");
  CHECK_THAT(events[1].message, Catch::Contains("(connection 9)") && Catch::Contains("jetfan keeps the message"));
}

TEST_CASE("a failed delivery by NAK says the handler's reason and its own delay, or a growing one", "[unit]") {
  World w;
  LogCapture capture;
  Effect effect = failed_effect(FailCause::kNak);
  effect.delay = std::chrono::milliseconds(1500);
  const TimePoint now{};
  const auto session = w.session(0);
  w.log.failed(effect, w.stored, session.get(), false, "database down", now);
  effect.delay = Duration(-1);  // none given
  w.log.failed(effect, w.stored, session.get(), true, "", now + std::chrono::milliseconds(1));
  const auto events = capture.named("delivery.failed");
  REQUIRE(events.size() == 2);
  CHECK(text(events[0].field("said")) == "database down");
  CHECK_THAT(events[0].message, Catch::Contains("failed: the handler sent NAK: \"database down\".") &&
                                    Catch::Contains("NAK after the handler's delay of 1.5s"));
  CHECK(text(events[1].field("said")).empty());
  CHECK_THAT(events[1].message, Catch::Contains("failed: the handler sent NAK.") &&
                                    Catch::Contains("again after a growing delay, before any later message"));
}

TEST_CASE("repeated warnings of one kind are held to the burst, the rest counted", "[unit]") {
  World w;
  LogCapture capture;
  Effect effect{Effect::Kind::kGaveUp};
  effect.handler = 1;
  effect.reason = GiveUpReason{false, 5, 5, FailCause::kNak};
  const TimePoint now{};
  for (int i = 0; i < 4; ++i) w.log.gave_up(effect, w.stored, now);
  for (int i = 0; i < 4; ++i) w.log.without_order_key(1, 42, *w.stored.message, w.stored.key, now);
  const auto gave_up = capture.named("retry.used_up");
  REQUIRE(gave_up.size() == 2);  // the burst
  CHECK(text(gave_up[0].field("handler")) == "ledger");
  CHECK(text(gave_up[0].field("reason")) == describe(effect.reason));
  CHECK_THAT(gave_up[0].message, Catch::Contains("no dead_letter subject"));
  const auto unordered = capture.named("delivery.without_order_key");
  REQUIRE(unordered.size() == 2);
  CHECK_THAT(unordered[0].message, Catch::Contains("ordered by header:Account") && Catch::Contains("no such header"));
  w.warnings.report_suppressed(now + std::chrono::milliseconds(20000));
  CHECK(capture.events().size() == 6);  // and one count of the held-back lines per kind
}

TEST_CASE("a handler's connection, its TERM and an answer naming nothing carry who it is", "[unit]") {
  World w;
  LogCapture capture;
  const auto session = w.session(1);
  w.log.connected(*session);
  w.log.terminated(*session, 17, "");
  w.log.unknown_answer(*session, proto::Verb::kAck, 18);
  w.log.disconnected(*session);
  const auto events = capture.events();
  REQUIRE(events.size() == 4);
  CHECK(events[0].event == "handler.connected");
  CHECK(events[1].event == "delivery.terminated");
  CHECK(text(events[1].field("reason")) == "(no reason given)");
  CHECK(text(events[1].field("delivery")) == "17");
  CHECK(events[2].event == "answer.unknown");
  CHECK(events[2].level == spdlog::level::debug);
  CHECK(events[3].event == "handler.disconnected");
  for (const auto& event : events) {
    CHECK(text(event.field("handler")) == "ledger");
    CHECK(text(event.field("pid")) == std::to_string(::getpid()));  // the socketpair's other end is this process
    CHECK_THAT(event.message, Catch::Contains(DispatchLog::describe(*session)));
  }
}

TEST_CASE("at start: handlers open to any process, and a descriptor limit below max_connections", "[unit]") {
  World w;
  w.config.handlers[1].allow.uids = {1000};
  LogCapture capture;
  w.log.unrestricted_handlers();
  w.log.connections_limited(1024, 100);
  const auto open = capture.named("handler.unrestricted");
  REQUIRE(open.size() == 1);
  CHECK(text(open[0].field("handler")) == "audit");
  CHECK_THAT(open[0].message, Catch::Contains("/run/jetfan/test.sock"));
  const auto limited = capture.named("socket.connections_limited");
  REQUIRE(limited.size() == 1);
  CHECK_THAT(limited[0].message, Catch::Contains("serving at most 100") && Catch::Contains("LimitNOFILE="));
}
