// The real Dispatcher with tracing on, into a recording sink: which spans its inputs and the core's
// effects make, and what the MSG carries. DeliveryTracer's own rules are in its test.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <variant>
#include <vector>

#include "dispatcher_harness.hpp"

using namespace jetfan;
using namespace jetfan::testing;

namespace {

class RecordingSink final : public SpanSink {
 public:
  void offer(SpanRecord&& span) override { spans.push_back(std::move(span)); }
  std::vector<SpanRecord> spans;
};

const std::string kTraceHex = "4bf92f3577b34da6a3ce929d0e0e4736";
const std::string kParentHex = "00f067aa0ba902b7";
const std::string kSampledHeaders = "NATS/1.0\r\ntraceparent: 00-" + kTraceHex + "-" + kParentHex + "-01\r\n\r\n";

Config traced(std::vector<HandlerSettings> handlers, double ratio) {
  Config c = config(std::move(handlers));
  c.tracing.emplace();
  c.tracing->endpoint = "http://127.0.0.1:4318/v1/traces";
  c.tracing->sample_ratio = ratio;
  return c;
}

std::string attr(const SpanRecord& span, const std::string& key) {
  for (const auto& a : span.attributes) {
    if (a.key != key) continue;
    if (const auto* s = std::get_if<std::string>(&a.value)) return *s;
    if (const auto* i = std::get_if<std::int64_t>(&a.value)) return std::to_string(*i);
    return "?";
  }
  return "";
}

const SpanRecord* span_named(const std::vector<SpanRecord>& spans, const std::string& name, std::size_t nth = 0) {
  for (const auto& span : spans) {
    if (span.name == name && nth-- == 0) return &span;
  }
  return nullptr;
}

}  // namespace

TEST_CASE(
    "tracing: a traced message gives a span per delivery, the MSG carries it, and the message span ends at the verb",
    "[unit]") {
  Harness h(traced({handler("audit", {"a.*"}), handler("billing", {"a.*"})}, 0.0));
  RecordingSink sink;
  h.dispatcher().enable_tracing(sink, nullptr, 42);
  const auto audit = h.hello("audit", 3);
  const auto billing = h.hello("billing", 3);
  h.upstream.deliver(FakeUpstream::Message{7, "ev.a.b", "payload", kSampledHeaders, 1, 0});
  h.pump();
  const auto to_audit = h.msgs(audit);
  const auto to_billing = h.msgs(billing);
  REQUIRE(to_audit.size() == 1);
  REQUIRE(to_billing.size() == 1);
  // Each MSG names its own delivery span, in the message's trace, sampled.
  const auto audit_context = parse_traceparent(to_audit[0].traceparent);
  const auto billing_context = parse_traceparent(to_billing[0].traceparent);
  REQUIRE(audit_context);
  REQUIRE(billing_context);
  CHECK(to_hex(audit_context->trace_id) == kTraceHex);
  CHECK(audit_context->sampled());
  CHECK(audit_context->span_id != billing_context->span_id);

  h.advance(milliseconds(5));
  h.send(audit, "ACK " + std::to_string(to_audit[0].id) + "\r\n");
  h.send(billing, "NAK " + std::to_string(to_billing[0].id) + " 250 db down\r\n");
  REQUIRE(h.replied(Kind::kNak) == std::vector<std::uint64_t>{7});

  REQUIRE(sink.spans.size() == 3);
  const SpanRecord* to_a = span_named(sink.spans, "deliver audit");
  const SpanRecord* to_b = span_named(sink.spans, "deliver billing");
  const SpanRecord* message = span_named(sink.spans, "process ev.a.b");
  REQUIRE(to_a);
  REQUIRE(to_b);
  REQUIRE(message);
  CHECK(to_a->span_id == audit_context->span_id);
  CHECK(to_b->span_id == billing_context->span_id);
  CHECK(to_a->parent_span_id == message->span_id);
  CHECK(to_b->parent_span_id == message->span_id);
  REQUIRE(message->parent_span_id);
  CHECK(to_hex(*message->parent_span_id) == kParentHex);
  CHECK(attr(*to_a, "jetfan.outcome") == "ack");
  CHECK(attr(*to_a, "jetfan.attempt") == "1");
  CHECK(attr(*to_b, "jetfan.outcome") == "nak");
  CHECK(attr(*to_b, "jetfan.reason") == "db down");
  CHECK(attr(*to_b, "jetfan.nak_delay_ms") == "250");
  CHECK(to_b->status_code == SpanStatusCode::kError);
  CHECK(attr(*message, "jetfan.settle") == "nak");
  CHECK(attr(*message, "jetfan.stream_seq") == "7");
  CHECK(attr(*message, "jetfan.recipients") == "2");

  const StatusSnapshot status = h.status();
  REQUIRE(status.tracing);
  CHECK(status.tracing->traced_messages == 1);
  CHECK(status.tracing->spans == 3);
  CHECK(status.tracing->open_messages == 0);
  CHECK(h.broken.empty());
}

TEST_CASE("tracing: an ack_timeout and a disconnect end their delivery spans so, and a TERM gives its reason",
          "[unit]") {
  HandlerSettings slow = handler("slow", {"a.*"});
  slow.ack_timeout = milliseconds(1000);
  Harness h(traced({slow, handler("gone", {"a.*"}), handler("judge", {"a.*"})}, 1.0));
  RecordingSink sink;
  h.dispatcher().enable_tracing(sink, nullptr, 7);
  const auto slow_peer = h.hello("slow", 3);
  const auto gone_peer = h.hello("gone", 3);
  const auto judge_peer = h.hello("judge", 3);
  h.deliver(1, "ev.a.x");  // no traceparent: a new trace, at ratio 1
  REQUIRE(h.msgs(slow_peer).size() == 1);
  REQUIRE(h.msgs(gone_peer).size() == 1);
  const auto judged = h.msgs(judge_peer);
  REQUIRE(judged.size() == 1);
  CHECK(parse_traceparent(judged[0].traceparent));
  h.send(judge_peer, "TERM " + std::to_string(judged[0].id) + " not for us\r\n");
  h.hang_up(gone_peer);
  h.advance(milliseconds(1500));

  const SpanRecord* judge = span_named(sink.spans, "deliver judge");
  const SpanRecord* gone = span_named(sink.spans, "deliver gone");
  const SpanRecord* slow_span = span_named(sink.spans, "deliver slow");
  REQUIRE(judge);
  REQUIRE(gone);
  REQUIRE(slow_span);
  CHECK(attr(*judge, "jetfan.outcome") == "term");
  CHECK(attr(*judge, "jetfan.reason") == "not for us");
  CHECK(attr(*gone, "jetfan.outcome") == "disconnect");
  CHECK(attr(*slow_span, "jetfan.outcome") == "timeout");
  CHECK(slow_span->parent_span_id.has_value());  // a child of the message span, itself a new root
}

TEST_CASE(
    "tracing: at ratio 0 a message without a traceparent is not traced and its MSG says -, and a reload's "
    "ratio applies to the next arrival",
    "[unit]") {
  Harness h(traced({handler("audit", {"a.*"})}, 0.0));
  RecordingSink sink;
  h.dispatcher().enable_tracing(sink, nullptr, 1);
  const auto audit = h.hello("audit", 3);
  h.deliver(1, "ev.a.x");
  auto got = h.msgs(audit);
  REQUIRE(got.size() == 1);
  CHECK(got[0].traceparent.empty());
  h.send(audit, "ACK " + std::to_string(got[0].id) + "\r\n");
  CHECK(sink.spans.empty());
  CHECK(h.status().tracing->traced_messages == 0);

  h.checking = false;
  h.config().tracing->sample_ratio = 1.0;
  ReloadPlan plan;
  plan.old_to_new = {std::size_t{0}};
  h.dispatcher().apply_reload(plan, serve(h.config()));
  h.deliver(2, "ev.a.y");
  got = h.msgs(audit);
  REQUIRE(got.size() == 1);
  CHECK(parse_traceparent(got[0].traceparent));
  CHECK(h.status().tracing->sample_ratio == 1.0);
}

TEST_CASE("tracing: off, a version 3 handler's MSG carries no traceparent and status has no tracing", "[unit]") {
  Harness h(config({handler("audit", {"a.*"})}));
  const auto audit = h.hello("audit", 3);
  h.upstream.deliver(FakeUpstream::Message{7, "ev.a.b", "payload", kSampledHeaders, 1, 0});
  h.pump();
  const auto got = h.msgs(audit);
  REQUIRE(got.size() == 1);
  CHECK(got[0].traceparent.empty());
  CHECK_FALSE(h.status().tracing.has_value());
}

TEST_CASE("tracing: an ordered handler's delivery says how long it waited behind the older message of its key",
          "[unit]") {
  HandlerSettings ordered = handler("ordered", {"a.*"});
  ordered.order_by = parse_order_by("key").value();
  Harness h(traced({ordered}, 1.0));
  RecordingSink sink;
  h.dispatcher().enable_tracing(sink, nullptr, 3);
  const auto peer = h.hello("ordered", 3);
  h.deliver(1, "ev.a.k");
  h.deliver(2, "ev.a.k");
  auto got = h.msgs(peer);
  REQUIRE(got.size() == 1);
  h.advance(milliseconds(20));
  h.send(peer, "ACK " + std::to_string(got[0].id) + "\r\n");
  got = h.msgs(peer);
  REQUIRE(got.size() == 1);
  CHECK(got[0].stream_seq == 2);
  h.send(peer, "ACK " + std::to_string(got[0].id) + "\r\n");
  REQUIRE(sink.spans.size() == 4);
  auto wait_of = [&](std::size_t nth) -> std::optional<double> {
    const SpanRecord* span = span_named(sink.spans, "deliver ordered", nth);
    REQUIRE(span);
    for (const auto& a : span->attributes) {
      if (a.key == "jetfan.order_wait_ms") return std::get<double>(a.value);
    }
    return std::nullopt;
  };
  CHECK_FALSE(wait_of(0).has_value());  // the first of its key went at once
  REQUIRE(wait_of(1).has_value());
  CHECK(*wait_of(1) == Approx(20.0));
  CHECK(h.broken.empty());
}
