#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "delivery_tracer.hpp"

using namespace jetfan;
using namespace std::chrono_literals;
using Json = nlohmann::json;
using Outcome = DeliveryTracer::Outcome;
using SettleVerb = DeliveryTracer::SettleVerb;

namespace {

class RecordingSink final : public SpanSink {
 public:
  void offer(SpanRecord&& span) override { spans.push_back(std::move(span)); }
  std::vector<SpanRecord> spans;
};

// A fixed origin on both clocks; `at(ms)` is that many milliseconds later on each.
const TimePoint kT0 = TimePoint{} + 1000h;
constexpr std::uint64_t kWall0 = 1'700'000'000'000'000'000ULL;
TimePoint at(std::chrono::milliseconds ms) { return kT0 + ms; }
std::uint64_t wall(std::chrono::milliseconds ms) {
  return kWall0 + static_cast<std::uint64_t>(std::chrono::nanoseconds(ms).count());
}

const std::string kTraceHex = "4bf92f3577b34da6a3ce929d0e0e4736";
const std::string kParentHex = "00f067aa0ba902b7";

std::string header_block(const std::string& flags) {
  return "NATS/1.0\r\nOther: x\r\ntraceparent: 00-" + kTraceHex + "-" + kParentHex + "-" + flags + "\r\n\r\n";
}

const AttributeValue* find_attribute(const SpanRecord& span, const std::string& key) {
  for (const auto& attribute : span.attributes) {
    if (attribute.key == key) return &attribute.value;
  }
  return nullptr;
}

std::string string_attr(const SpanRecord& span, const std::string& key) {
  const AttributeValue* value = find_attribute(span, key);
  REQUIRE(value != nullptr);
  REQUIRE(std::holds_alternative<std::string>(*value));
  return std::get<std::string>(*value);
}

std::int64_t int_attr(const SpanRecord& span, const std::string& key) {
  const AttributeValue* value = find_attribute(span, key);
  REQUIRE(value != nullptr);
  REQUIRE(std::holds_alternative<std::int64_t>(*value));
  return std::get<std::int64_t>(*value);
}

double double_attr(const SpanRecord& span, const std::string& key) {
  const AttributeValue* value = find_attribute(span, key);
  REQUIRE(value != nullptr);
  REQUIRE(std::holds_alternative<double>(*value));
  return std::get<double>(*value);
}

bool has_attr(const SpanRecord& span, const std::string& key) { return find_attribute(span, key) != nullptr; }

struct Fixture {
  explicit Fixture(double ratio = 0.0) : tracer(DeliveryTracerSettings{ratio}, ids, sink) {}

  void arrive(MessageHandle handle, const std::string& headers, std::chrono::milliseconds when = 0ms) {
    tracer.arrived(handle, 42, "orders.created", headers, 1, wall(when), at(when));
  }
  std::optional<std::string> deliver(MessageHandle handle, ConnectionId conn, DeliveryId id, const std::string& handler,
                                     std::uint64_t attempt, std::chrono::milliseconds when) {
    return tracer.delivered(handle, conn, id, handler, attempt, wall(when), at(when));
  }
  void confirm(ConnectionId conn, DeliveryId id, Outcome outcome, std::chrono::milliseconds when,
               std::optional<std::int64_t> delay = std::nullopt, const std::string& reason = "") {
    tracer.confirmed(conn, id, outcome, delay, reason, wall(when), at(when));
  }
  void settle(MessageHandle handle, SettleVerb verb, std::chrono::milliseconds when) {
    tracer.settled(handle, verb, wall(when), at(when));
  }
  bool empty() const { return tracer.open_messages() == 0 && tracer.open_deliveries() == 0; }

  IdSource ids{7};
  RecordingSink sink;
  DeliveryTracer tracer;
};

const SpanRecord& span_named(const std::vector<SpanRecord>& spans, const std::string& name, std::size_t nth = 0) {
  for (const auto& span : spans) {
    if (span.name == name && nth-- == 0) return span;
  }
  FAIL("no span " << name);
  static const SpanRecord none;
  return none;
}

}  // namespace

TEST_CASE("DeliveryTracer: a sampled traceparent makes the message span its child and the deliveries children of it",
          "[unit][delivery_tracer]") {
  Fixture f;  // ratio 0: only the header can make it traced
  f.arrive(1, header_block("01"), 0ms);
  CHECK(f.tracer.traced_messages() == 1);
  CHECK(f.tracer.open_messages() == 1);

  const auto a = f.deliver(1, 10, 100, "builder", 1, 5ms);
  const auto b = f.deliver(1, 11, 200, "indexer", 1, 7ms);
  REQUIRE(a.has_value());
  REQUIRE(b.has_value());
  CHECK(f.tracer.open_deliveries() == 2);
  const auto ctx_a = parse_traceparent(*a);
  const auto ctx_b = parse_traceparent(*b);
  REQUIRE(ctx_a.has_value());
  REQUIRE(ctx_b.has_value());
  CHECK(to_hex(ctx_a->trace_id) == kTraceHex);
  CHECK(ctx_a->sampled());
  CHECK(ctx_a->span_id != ctx_b->span_id);

  f.confirm(10, 100, Outcome::kAck, 20ms);
  f.confirm(11, 200, Outcome::kAck, 30ms);
  f.settle(1, SettleVerb::kAck, 31ms);
  REQUIRE(f.sink.spans.size() == 3);
  CHECK(f.tracer.spans_made() == 3);

  const SpanRecord& message = span_named(f.sink.spans, "process orders.created");
  CHECK(message.kind == SpanKind::kConsumer);
  CHECK(to_hex(message.trace_id) == kTraceHex);
  REQUIRE(message.parent_span_id.has_value());
  CHECK(to_hex(*message.parent_span_id) == kParentHex);
  CHECK(to_hex(message.span_id) != kParentHex);
  CHECK(message.start_unix_nanos == wall(0ms));
  CHECK(message.end_unix_nanos == wall(31ms));
  CHECK(message.status_code == SpanStatusCode::kUnset);
  CHECK(string_attr(message, "jetfan.settle") == "ack");
  CHECK(string_attr(message, "messaging.system") == "nats");
  CHECK(string_attr(message, "messaging.destination.name") == "orders.created");
  CHECK(string_attr(message, "messaging.message.id") == "42");
  CHECK(int_attr(message, "jetfan.stream_seq") == 42);
  CHECK(int_attr(message, "jetfan.server_deliveries") == 1);
  CHECK(int_attr(message, "jetfan.recipients") == 2);
  CHECK_FALSE(has_attr(message, "jetfan.dead_lettered"));

  const SpanRecord& builder = span_named(f.sink.spans, "deliver builder");
  const SpanRecord& indexer = span_named(f.sink.spans, "deliver indexer");
  for (const SpanRecord* delivery : {&builder, &indexer}) {
    CHECK(delivery->kind == SpanKind::kClient);
    CHECK(delivery->trace_id == message.trace_id);
    REQUIRE(delivery->parent_span_id.has_value());
    CHECK(*delivery->parent_span_id == message.span_id);
    CHECK(delivery->status_code == SpanStatusCode::kUnset);
    CHECK(string_attr(*delivery, "jetfan.outcome") == "ack");
    CHECK(int_attr(*delivery, "jetfan.attempt") == 1);
    CHECK(delivery->start_unix_nanos == wall(0ms));  // ready at arrival
  }
  CHECK(builder.span_id == ctx_a->span_id);
  CHECK(indexer.span_id == ctx_b->span_id);
  CHECK(string_attr(builder, "jetfan.handler") == "builder");
  CHECK(int_attr(builder, "jetfan.connection") == 10);
  CHECK(builder.end_unix_nanos == wall(20ms));
  CHECK(double_attr(builder, "jetfan.queued_ms") == Approx(5.0));
  CHECK(double_attr(builder, "jetfan.in_handler_ms") == Approx(15.0));
  CHECK(double_attr(indexer, "jetfan.queued_ms") == Approx(7.0));
  CHECK(double_attr(indexer, "jetfan.in_handler_ms") == Approx(23.0));

  f.tracer.released(1);
  CHECK(f.empty());
  CHECK(f.tracer.dropped_open() == 0);
}

TEST_CASE("DeliveryTracer: durations come from the steady times even when the wall clock steps",
          "[unit][delivery_tracer]") {
  Fixture f;
  f.tracer.arrived(1, 1, "s", header_block("01"), 1, wall(0ms), at(0ms));
  // The wall clock went back a second between the MSG and the ACK.
  REQUIRE(f.tracer.delivered(1, 1, 1, "h", 1, wall(2ms), at(2ms)).has_value());
  f.tracer.confirmed(1, 1, Outcome::kAck, std::nullopt, "", wall(0ms) - 1'000'000'000ULL, at(9ms));
  REQUIRE(f.sink.spans.size() == 1);
  const SpanRecord& span = f.sink.spans[0];
  CHECK(double_attr(span, "jetfan.queued_ms") == Approx(2.0));
  CHECK(double_attr(span, "jetfan.in_handler_ms") == Approx(7.0));
  CHECK(span.end_unix_nanos == span.start_unix_nanos);  // never before its start
}

TEST_CASE("DeliveryTracer: an unsampled traceparent traces nothing and keeps nothing", "[unit][delivery_tracer]") {
  Fixture f(1.0);  // even with ratio 1: the parent decides
  f.arrive(1, header_block("00"), 0ms);
  CHECK(f.tracer.traced_messages() == 0);
  CHECK(f.empty());
  CHECK_FALSE(f.deliver(1, 10, 100, "builder", 1, 1ms).has_value());
  CHECK(f.empty());
  f.confirm(10, 100, Outcome::kNak, 2ms, 500);
  f.tracer.dead_lettered(1, "builder", wall(3ms));
  f.settle(1, SettleVerb::kAck, 4ms);
  f.tracer.released(1);
  CHECK(f.sink.spans.empty());
  CHECK(f.tracer.spans_made() == 0);
  CHECK(f.empty());
}

TEST_CASE("DeliveryTracer: without a traceparent, ratio 1 makes a root trace", "[unit][delivery_tracer]") {
  Fixture f(1.0);
  f.arrive(1, "", 0ms);
  CHECK(f.tracer.traced_messages() == 1);
  const auto parent = f.deliver(1, 3, 9, "builder", 1, 1ms);
  REQUIRE(parent.has_value());
  f.confirm(3, 9, Outcome::kAck, 2ms);
  f.settle(1, SettleVerb::kAck, 3ms);
  REQUIRE(f.sink.spans.size() == 2);
  const SpanRecord& message = span_named(f.sink.spans, "process orders.created");
  CHECK_FALSE(message.parent_span_id.has_value());
  CHECK(is_valid(message.trace_id));
  const auto context = parse_traceparent(*parent);
  REQUIRE(context.has_value());
  CHECK(context->trace_id == message.trace_id);
  CHECK(context->flags == kTraceFlagSampled);
  CHECK(f.empty());
}

TEST_CASE("DeliveryTracer: an invalid traceparent counts as none", "[unit][delivery_tracer]") {
  Fixture none(0.0);
  none.arrive(1, "NATS/1.0\r\ntraceparent: 00-nonsense-01\r\n\r\n", 0ms);
  CHECK(none.tracer.traced_messages() == 0);
  CHECK(none.empty());

  Fixture all(1.0);
  all.arrive(1, "NATS/1.0\r\ntraceparent: 00-nonsense-01\r\n\r\n", 0ms);
  CHECK(all.tracer.traced_messages() == 1);
  all.settle(1, SettleVerb::kNone, 1ms);
  REQUIRE(all.sink.spans.size() == 1);
  CHECK_FALSE(all.sink.spans[0].parent_span_id.has_value());
  CHECK(string_attr(all.sink.spans[0], "jetfan.settle") == "none");
}

TEST_CASE("DeliveryTracer: ratio 0 traces no message without a traceparent", "[unit][delivery_tracer]") {
  Fixture f(0.0);
  for (MessageHandle handle = 1; handle <= 200; ++handle) {
    f.arrive(handle, "", 0ms);
    CHECK_FALSE(f.deliver(handle, 1, handle, "h", 1, 1ms).has_value());
    f.settle(handle, SettleVerb::kAck, 2ms);
  }
  CHECK(f.tracer.traced_messages() == 0);
  CHECK(f.sink.spans.empty());
  CHECK(f.empty());
}

TEST_CASE("DeliveryTracer: a ratio between traces about that share", "[unit][delivery_tracer]") {
  Fixture f(0.25);
  for (MessageHandle handle = 1; handle <= 4000; ++handle) {
    f.arrive(handle, "", 0ms);
    f.settle(handle, SettleVerb::kAck, 1ms);
  }
  CHECK(f.tracer.traced_messages() > 800);
  CHECK(f.tracer.traced_messages() < 1200);
  CHECK(f.sink.spans.size() == f.tracer.traced_messages());
  CHECK(f.empty());
}

TEST_CASE("DeliveryTracer: a NAK then a redelivery makes two delivery spans", "[unit][delivery_tracer]") {
  Fixture f;
  f.arrive(1, header_block("01"), 0ms);
  REQUIRE(f.deliver(1, 10, 100, "builder", 1, 4ms).has_value());
  f.confirm(10, 100, Outcome::kNak, 10ms, 250, "db busy");
  CHECK(f.tracer.open_deliveries() == 0);
  REQUIRE(f.sink.spans.size() == 1);
  const SpanRecord first = f.sink.spans[0];
  CHECK(string_attr(first, "jetfan.outcome") == "nak");
  CHECK(int_attr(first, "jetfan.nak_delay_ms") == 250);
  CHECK(string_attr(first, "jetfan.reason") == "db busy");
  CHECK(first.status_code == SpanStatusCode::kError);
  CHECK(first.status_message == "db busy");
  CHECK(int_attr(first, "jetfan.attempt") == 1);

  // Redelivered (inside jetfan) 260 ms after the NAK, on another instance.
  REQUIRE(f.deliver(1, 11, 7, "builder", 2, 270ms).has_value());
  f.confirm(11, 7, Outcome::kAck, 275ms);
  f.settle(1, SettleVerb::kAck, 276ms);
  REQUIRE(f.sink.spans.size() == 3);
  const SpanRecord& second = span_named(f.sink.spans, "deliver builder", 1);
  CHECK(int_attr(second, "jetfan.attempt") == 2);
  CHECK(second.start_unix_nanos == wall(10ms));  // ready again at the NAK
  CHECK(double_attr(second, "jetfan.queued_ms") == Approx(260.0));
  CHECK(double_attr(second, "jetfan.in_handler_ms") == Approx(5.0));
  CHECK_FALSE(has_attr(second, "jetfan.nak_delay_ms"));
  CHECK_FALSE(has_attr(second, "jetfan.reason"));
  CHECK(second.status_code == SpanStatusCode::kUnset);
  CHECK(second.span_id != first.span_id);
  const SpanRecord& message = span_named(f.sink.spans, "process orders.created");
  CHECK(int_attr(message, "jetfan.recipients") == 1);
  CHECK(int_attr(message, "jetfan.deliveries") == 2);
  CHECK(f.empty());
}

TEST_CASE("DeliveryTracer: timeout and disconnect outcomes are errors", "[unit][delivery_tracer]") {
  Fixture f;
  f.arrive(1, header_block("01"), 0ms);
  REQUIRE(f.deliver(1, 10, 1, "slow", 1, 1ms).has_value());
  REQUIRE(f.deliver(1, 20, 1, "flaky", 1, 1ms).has_value());
  REQUIRE(f.deliver(1, 20, 2, "other", 1, 1ms).has_value());
  f.confirm(10, 1, Outcome::kTimeout, 30'001ms);
  f.tracer.disconnected(20, wall(40ms), at(40ms));
  CHECK(f.tracer.open_deliveries() == 0);
  REQUIRE(f.sink.spans.size() == 3);
  const SpanRecord& slow = span_named(f.sink.spans, "deliver slow");
  CHECK(string_attr(slow, "jetfan.outcome") == "timeout");
  CHECK(slow.status_code == SpanStatusCode::kError);
  CHECK(slow.status_message == "timeout");
  CHECK(double_attr(slow, "jetfan.in_handler_ms") == Approx(30'000.0));
  for (const char* name : {"deliver flaky", "deliver other"}) {
    const SpanRecord& span = span_named(f.sink.spans, name);
    CHECK(string_attr(span, "jetfan.outcome") == "disconnect");
    CHECK(span.status_code == SpanStatusCode::kError);
    CHECK_FALSE(has_attr(span, "jetfan.nak_delay_ms"));
  }
  // A late ACK for the timed-out delivery is unknown by then.
  f.confirm(10, 1, Outcome::kAck, 30'500ms);
  CHECK(f.sink.spans.size() == 3);
  f.settle(1, SettleVerb::kTerm, 41ms);
  const SpanRecord& message = span_named(f.sink.spans, "process orders.created");
  CHECK(message.status_code == SpanStatusCode::kError);
  CHECK(string_attr(message, "jetfan.settle") == "term");
  CHECK(int_attr(message, "jetfan.recipients") == 3);
  CHECK(f.empty());
}

TEST_CASE("DeliveryTracer: settling ends the deliveries still open as abandoned", "[unit][delivery_tracer]") {
  Fixture f;
  f.arrive(1, header_block("01"), 0ms);
  REQUIRE(f.deliver(1, 10, 1, "a", 1, 1ms).has_value());
  REQUIRE(f.deliver(1, 11, 1, "b", 1, 2ms).has_value());
  f.confirm(10, 1, Outcome::kAck, 3ms);
  f.tracer.dead_lettered(1, "c", wall(4ms));
  f.tracer.dead_lettered(1, "d", wall(4ms));
  f.tracer.dead_lettered(1, "c", wall(5ms));  // a publish tried again names it once
  f.settle(1, SettleVerb::kNak, 50ms);
  CHECK(f.empty());
  REQUIRE(f.sink.spans.size() == 3);
  const SpanRecord& b = span_named(f.sink.spans, "deliver b");
  CHECK(string_attr(b, "jetfan.outcome") == "abandoned");
  CHECK(b.status_code == SpanStatusCode::kError);
  CHECK(b.end_unix_nanos == wall(50ms));
  CHECK(double_attr(b, "jetfan.in_handler_ms") == Approx(48.0));
  // The abandoned one is offered before the message span it belongs to.
  CHECK(f.sink.spans.back().name == "process orders.created");
  const SpanRecord& message = f.sink.spans.back();
  CHECK(string_attr(message, "jetfan.settle") == "nak");
  CHECK(message.status_code == SpanStatusCode::kUnset);
  CHECK(string_attr(message, "jetfan.dead_lettered") == "c,d");
  // Its confirmation after the settle is ignored.
  f.confirm(11, 1, Outcome::kAck, 60ms);
  CHECK(f.sink.spans.size() == 3);
}

TEST_CASE("DeliveryTracer: a handle arriving again while open replaces its course", "[unit][delivery_tracer]") {
  Fixture f;
  f.arrive(1, header_block("01"), 0ms);
  REQUIRE(f.deliver(1, 10, 1, "a", 1, 1ms).has_value());
  f.arrive(1, "", 5ms);  // ratio 0, no header: the new course is not traced
  REQUIRE(f.sink.spans.size() == 2);
  CHECK(string_attr(span_named(f.sink.spans, "deliver a"), "jetfan.outcome") == "abandoned");
  CHECK(string_attr(span_named(f.sink.spans, "process orders.created"), "jetfan.settle") == "replaced");
  CHECK(f.empty());
  CHECK_FALSE(f.deliver(1, 10, 2, "a", 1, 6ms).has_value());

  // And again, traced: a course of its own, with a new span id.
  f.arrive(1, header_block("01"), 10ms);
  f.settle(1, SettleVerb::kAck, 11ms);
  REQUIRE(f.sink.spans.size() == 3);
  CHECK(f.sink.spans[2].span_id != f.sink.spans[1].span_id);
  CHECK(f.sink.spans[2].start_unix_nanos == wall(10ms));
  CHECK(f.tracer.traced_messages() == 2);
}

TEST_CASE("DeliveryTracer: release of an open course drops it without a span", "[unit][delivery_tracer]") {
  Fixture f;
  f.arrive(1, header_block("01"), 0ms);
  REQUIRE(f.deliver(1, 10, 1, "a", 1, 1ms).has_value());
  f.tracer.released(1);
  CHECK(f.empty());
  CHECK(f.sink.spans.empty());
  CHECK(f.tracer.dropped_open() == 1);
  f.confirm(10, 1, Outcome::kAck, 2ms);
  f.settle(1, SettleVerb::kAck, 3ms);
  CHECK(f.sink.spans.empty());
}

TEST_CASE("DeliveryTracer: confirmations of unknown pairs are ignored", "[unit][delivery_tracer]") {
  Fixture f;
  f.arrive(1, header_block("01"), 0ms);
  REQUIRE(f.deliver(1, 10, 1, "a", 1, 1ms).has_value());
  f.confirm(10, 2, Outcome::kAck, 2ms);
  f.confirm(11, 1, Outcome::kTerm, 2ms, std::nullopt, "bogus");
  f.tracer.disconnected(9, wall(2ms), at(2ms));
  f.tracer.disconnected(11, wall(2ms), at(2ms));
  CHECK(f.sink.spans.empty());
  CHECK(f.tracer.open_deliveries() == 1);
  f.confirm(10, 1, Outcome::kTerm, 3ms, std::nullopt, "bad payload");
  REQUIRE(f.sink.spans.size() == 1);
  CHECK(string_attr(f.sink.spans[0], "jetfan.reason") == "bad payload");
  CHECK(string_attr(f.sink.spans[0], "jetfan.outcome") == "term");
  CHECK(f.tracer.open_deliveries() == 0);
  // Unknown handles, too.
  CHECK_FALSE(f.deliver(99, 10, 5, "a", 1, 4ms).has_value());
  f.tracer.dead_lettered(99, "a", wall(4ms));
  f.settle(99, SettleVerb::kAck, 4ms);
  f.tracer.released(99);
  CHECK(f.sink.spans.size() == 1);
  CHECK(f.tracer.open_messages() == 1);
}

TEST_CASE("DeliveryTracer: many messages leave no state behind", "[unit][delivery_tracer]") {
  Fixture f(1.0);
  std::size_t most_messages = 0;
  std::size_t most_deliveries = 0;
  for (MessageHandle handle = 1; handle <= 5000; ++handle) {
    const auto t = std::chrono::milliseconds(handle);
    f.arrive(handle, handle % 2 == 0 ? header_block("01") : std::string(), t);
    REQUIRE(f.deliver(handle, 1, handle, "a", 1, t).has_value());
    REQUIRE(f.deliver(handle, 2, handle, "b", 1, t).has_value());
    if (handle % 3 == 0) {
      f.confirm(1, handle, Outcome::kNak, t + 1ms, 10);
      REQUIRE(f.deliver(handle, 1, handle + 100'000, "a", 2, t + 2ms).has_value());
      f.confirm(1, handle + 100'000, Outcome::kAck, t + 3ms);
    } else {
      f.confirm(1, handle, Outcome::kAck, t + 1ms);
    }
    if (handle % 5 != 0) f.confirm(2, handle, Outcome::kAck, t + 1ms);  // else abandoned at the settle
    most_messages = std::max(most_messages, f.tracer.open_messages());
    most_deliveries = std::max(most_deliveries, f.tracer.open_deliveries());
    // Settle each message one step late, so that two are open at a time.
    if (handle > 1) {
      f.settle(handle - 1, SettleVerb::kAck, t + 4ms);
      f.tracer.released(handle - 1);
    }
  }
  f.settle(5000, SettleVerb::kAck, 6000ms);
  f.tracer.released(5000);
  CHECK(most_messages == 2);
  CHECK(most_deliveries == 1);  // b's delivery, left open every fifth message
  CHECK(f.empty());
  CHECK(f.tracer.traced_messages() == 5000);
  CHECK(f.tracer.dropped_open() == 0);
  // Each message: its span, two deliveries, and one more for every third.
  CHECK(f.tracer.spans_made() == 5000 * 3 + 5000 / 3);
  CHECK(f.sink.spans.size() == f.tracer.spans_made());
}

TEST_CASE("DeliveryTracer: its spans make a valid OTLP/JSON export", "[unit][delivery_tracer]") {
  Fixture f;
  f.arrive(1, header_block("01"), 0ms);
  REQUIRE(f.deliver(1, 10, 1, "builder", 1, 1ms).has_value());
  f.confirm(10, 1, Outcome::kNak, 2ms, 100, "later");
  f.settle(1, SettleVerb::kNak, 3ms);
  REQUIRE(f.sink.spans.size() == 2);

  const Json body = Json::parse(otlp_traces_json(f.sink.spans, Resource{"jetfan", "0.1.0", "node1", {}}));
  const Json& spans = body.at("resourceSpans").at(0).at("scopeSpans").at(0).at("spans");
  REQUIRE(spans.size() == 2);
  const Json& delivery = spans.at(0);
  const Json& message = spans.at(1);
  CHECK(delivery.at("name") == "deliver builder");
  CHECK(delivery.at("kind") == static_cast<int>(SpanKind::kClient));
  CHECK(delivery.at("traceId") == kTraceHex);
  CHECK(delivery.at("parentSpanId") == message.at("spanId"));
  CHECK(delivery.at("status").at("code") == static_cast<int>(SpanStatusCode::kError));
  CHECK(message.at("parentSpanId") == kParentHex);
  CHECK(message.at("kind") == static_cast<int>(SpanKind::kConsumer));
  CHECK(message.at("startTimeUnixNano") == std::to_string(wall(0ms)));
  CHECK(message.at("endTimeUnixNano") == std::to_string(wall(3ms)));
}

TEST_CASE("DeliveryTracer: a wait behind an older message of the key is its own figure, within queued_ms",
          "[unit][delivery_tracer]") {
  Fixture f;
  f.arrive(1, header_block("01"), 0ms);
  f.tracer.order_released(1, "ordered", at(30ms));
  f.deliver(1, 10, 100, "ordered", 1, 32ms);
  f.deliver(1, 11, 200, "other", 1, 1ms);
  f.confirm(10, 100, Outcome::kNak, 40ms);
  f.deliver(1, 10, 101, "ordered", 2, 50ms);  // a retry without a new wait for order
  f.confirm(10, 101, Outcome::kAck, 60ms);
  f.confirm(11, 200, Outcome::kAck, 61ms);
  f.settle(1, SettleVerb::kAck, 62ms);
  const SpanRecord& waited = span_named(f.sink.spans, "deliver ordered", 0);
  CHECK(double_attr(waited, "jetfan.order_wait_ms") == Approx(30.0));
  CHECK(double_attr(waited, "jetfan.queued_ms") == Approx(32.0));
  CHECK_FALSE(has_attr(span_named(f.sink.spans, "deliver ordered", 1), "jetfan.order_wait_ms"));
  CHECK_FALSE(has_attr(span_named(f.sink.spans, "deliver other"), "jetfan.order_wait_ms"));
  f.tracer.order_released(99, "ordered", at(70ms));  // unknown: nothing kept
  CHECK(f.empty());
}
