#include "dispatch_tracing.hpp"

#include "logging.hpp"

namespace jetfan {

namespace {

using Outcome = DeliveryTracer::Outcome;
using SettleVerb = DeliveryTracer::SettleVerb;

// Failing exports are worth a line, not one per batch: a collector that is down stays down a while.
constexpr Duration kWarnEvery{60000};

Outcome outcome_of(FailCause cause) {
  switch (cause) {
    case FailCause::kNak:
      return Outcome::kNak;
    case FailCause::kTimeout:
      return Outcome::kTimeout;
    case FailCause::kDisconnect:
      break;
  }
  return Outcome::kDisconnect;
}

}  // namespace

DispatchTracing::DispatchTracing(const Config& config, double sample_ratio, std::uint64_t seed, SpanSink& sink,
                                 const SpanExporter* exporter)
    : config_(config), ids_(seed), tracer_(DeliveryTracerSettings{sample_ratio}, ids_, sink), exporter_(exporter) {}

void DispatchTracing::arrived(MessageHandle handle, const HeldMessage& held, std::uint64_t wall_ns, TimePoint now) {
  tracer_.arrived(handle, held.stream_seq, held.message->subject(), held.message->headers(), held.deliveries, wall_ns,
                  now);
}

std::optional<std::string> DispatchTracing::effect(const Effect& effect, std::size_t handler, std::string_view reason,
                                                   std::uint64_t wall_ns, TimePoint now) {
  switch (effect.kind) {
    case Effect::Kind::kDeliver:
      return tracer_.delivered(effect.message, effect.connection, effect.delivery, config_.handlers.at(handler).name,
                               effect.deliveries, wall_ns, now);
    case Effect::Kind::kFailed: {
      // A NAK's delay is the handler's own, negative when it gave none.
      std::optional<std::int64_t> delay;
      if (effect.cause == FailCause::kNak && effect.delay.count() >= 0) delay = effect.delay.count();
      tracer_.confirmed(effect.connection, effect.delivery, outcome_of(effect.cause), delay, reason, wall_ns, now);
      break;
    }
    case Effect::Kind::kOrderReleased:
      tracer_.order_released(effect.message, config_.handlers.at(effect.handler).name, now);
      break;
    case Effect::Kind::kDeadLetter:
      tracer_.dead_lettered(effect.message, config_.handlers.at(effect.handler).name, wall_ns);
      break;
    case Effect::Kind::kAck:
      tracer_.settled(effect.message, SettleVerb::kAck, wall_ns, now);
      break;
    case Effect::Kind::kNak:
      tracer_.settled(effect.message, SettleVerb::kNak, wall_ns, now);
      break;
    case Effect::Kind::kTerm:
      tracer_.settled(effect.message, SettleVerb::kTerm, wall_ns, now);
      break;
    case Effect::Kind::kRelease:
      // Released without a verb of its own (AckPolicy none, or all below the floor): it ends here.
      tracer_.settled(effect.message, SettleVerb::kNone, wall_ns, now);
      tracer_.released(effect.message);
      break;
    default:
      break;
  }
  return std::nullopt;
}

void DispatchTracing::answered(ConnectionId connection, const proto::Command& command, std::uint64_t wall_ns,
                               TimePoint now) {
  if (command.verb == proto::Verb::kAck) {
    tracer_.confirmed(connection, command.id, Outcome::kAck, std::nullopt, {}, wall_ns, now);
  } else if (command.verb == proto::Verb::kTerm) {
    tracer_.confirmed(connection, command.id, Outcome::kTerm, std::nullopt, command.reason, wall_ns, now);
  }
}

void DispatchTracing::housekeeping(TimePoint now) {
  if (exporter_ == nullptr) return;
  if (last_warning_ && now - *last_warning_ < kWarnEvery) return;
  const SpanExporterCounters c = exporter_->counters();
  const std::uint64_t dropped = c.dropped_queue_full + c.dropped_export_failed;
  if (c.failed_requests == failures_told_ && dropped == dropped_told_) return;
  const std::uint64_t failed = c.failed_requests - failures_told_;
  const std::uint64_t lost = dropped - dropped_told_;
  failures_told_ = c.failed_requests;
  dropped_told_ = dropped;
  last_warning_ = now;
  const std::string endpoint = config_.tracing ? config_.tracing->endpoint : std::string();
  const std::string last = exporter_->last_error();
  log_warn("tracing.dropped",
           {{"endpoint", endpoint}, {"failed_requests", failed}, {"dropped_spans", lost}, {"last_error", last}},
           "tracing: {} span(s) dropped and {} export(s) to {} failed since the last report{}{}; messages are not "
           "affected, only their spans (jetfan status shows the totals)",
           lost, failed, endpoint, last.empty() ? "" : "; last error: ", last);
}

void DispatchTracing::fill(StatusSnapshot& snapshot) const {
  StatusSnapshot::Tracing t;
  t.endpoint = config_.tracing ? config_.tracing->endpoint : std::string();
  t.sample_ratio = tracer_.sample_ratio();
  t.traced_messages = tracer_.traced_messages();
  t.spans = tracer_.spans_made();
  t.open_messages = tracer_.open_messages();
  t.open_deliveries = tracer_.open_deliveries();
  if (exporter_ != nullptr) {
    const SpanExporterCounters c = exporter_->counters();
    t.exported = c.exported;
    t.dropped_queue_full = c.dropped_queue_full;
    t.dropped_export_failed = c.dropped_export_failed + c.dropped_after_stop;
    t.export_requests = c.export_requests;
    t.failed_requests = c.failed_requests;
    t.last_error = exporter_->last_error();
  }
  snapshot.tracing = std::move(t);
}

}  // namespace jetfan
