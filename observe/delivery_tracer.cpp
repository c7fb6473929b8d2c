#include "delivery_tracer.hpp"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <limits>

namespace jetfan {

namespace {

constexpr std::string_view kAbandoned = "abandoned";
constexpr std::string_view kReplaced = "replaced";

// Milliseconds from `from` to `to` on the steady clock, never negative.
double elapsed_ms(TimePoint from, TimePoint to) {
  if (to <= from) return 0.0;
  return std::chrono::duration<double, std::milli>(to - from).count();
}

// OTLP's integers are signed; sequences and counts past 2^63 do not occur, and are capped if they do.
std::int64_t as_int(std::uint64_t value) {
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  return static_cast<std::int64_t>(std::min(value, kMax));
}

std::string_view outcome_name(DeliveryTracer::Outcome outcome) {
  switch (outcome) {
    case DeliveryTracer::Outcome::kAck:
      return "ack";
    case DeliveryTracer::Outcome::kNak:
      return "nak";
    case DeliveryTracer::Outcome::kTerm:
      return "term";
    case DeliveryTracer::Outcome::kTimeout:
      return "timeout";
    case DeliveryTracer::Outcome::kDisconnect:
      return "disconnect";
  }
  return "unknown";
}

std::string_view verb_name(DeliveryTracer::SettleVerb verb) {
  switch (verb) {
    case DeliveryTracer::SettleVerb::kAck:
      return "ack";
    case DeliveryTracer::SettleVerb::kNak:
      return "nak";
    case DeliveryTracer::SettleVerb::kTerm:
      return "term";
    case DeliveryTracer::SettleVerb::kNone:
      return "none";
  }
  return "unknown";
}

void add(std::vector<Attribute>& attributes, std::string_view key, AttributeValue value) {
  attributes.push_back(Attribute{std::string(key), std::move(value)});
}

}  // namespace

DeliveryTracer::DeliveryTracer(DeliveryTracerSettings settings, IdSource& ids, SpanSink& sink)
    : settings_(settings), ids_(ids), sink_(sink) {}

void DeliveryTracer::arrived(MessageHandle handle, std::uint64_t stream_seq, std::string_view subject,
                             std::string_view header_block, std::uint64_t server_deliveries, std::uint64_t wall_ns,
                             TimePoint now) {
  const Instant at{now, wall_ns};
  if (const auto old = find_message(handle); old != messages_.end()) end_message(old, kReplaced, false, at);

  // Decided before anything is made: most messages are not traced, and cost only this.
  TraceId trace_id{};
  std::optional<SpanId> parent_span;
  if (const auto parent = traceparent_from_headers(header_block)) {
    if (!parent->sampled()) return;
    trace_id = parent->trace_id;
    parent_span = parent->span_id;
  } else {
    trace_id = ids_.next_trace_id();
    if (!sampled_by_ratio(trace_id, settings_.sample_ratio)) return;
  }
  MessageState message;
  message.context.trace_id = trace_id;
  message.parent = parent_span;
  message.context.span_id = ids_.next_span_id();
  // Only the sampled flag: the others are not jetfan's to vouch for (W3C level 1).
  message.context.flags = kTraceFlagSampled;
  message.subject = std::string(subject);
  message.stream_seq = stream_seq;
  message.server_deliveries = server_deliveries;
  message.arrival = at;
  messages_.emplace(handle, std::move(message));  // none is open under it: ended above
  ++open_by_slot_[handle % kSlots];
  ++traced_messages_;
}

DeliveryTracer::Messages::iterator DeliveryTracer::find_message(MessageHandle handle) {
  if (open_by_slot_[handle % kSlots] == 0) return messages_.end();
  return messages_.find(handle);
}

DeliveryTracer::HandlerEntry& DeliveryTracer::handler_entry(MessageState& message, std::string_view handler) {
  const auto found = std::find_if(message.handlers.begin(), message.handlers.end(),
                                  [&](const HandlerEntry& entry) { return entry.handler == handler; });
  if (found != message.handlers.end()) return *found;
  return message.handlers.emplace_back(HandlerEntry{std::string(handler), message.arrival});
}

std::optional<std::string> DeliveryTracer::delivered(MessageHandle handle, ConnectionId connection, DeliveryId delivery,
                                                     std::string_view handler, std::uint64_t attempt,
                                                     std::uint64_t wall_ns, TimePoint now) {
  const Instant at{now, wall_ns};
  const DeliveryKey key{connection, delivery};
  // The pair names one delivery; one still open under it was lost track of: end it first.
  if (const auto old = deliveries_.find(key); old != deliveries_.end()) {
    end_delivery(old, kAbandoned, true, std::nullopt, {}, at);
  }
  const auto found = find_message(handle);
  if (found == messages_.end()) return std::nullopt;
  MessageState& message = found->second;

  DeliveryState state;
  state.handle = handle;
  state.span_id = ids_.next_span_id();
  state.handler = std::string(handler);
  state.attempt = attempt;
  HandlerEntry& entry = handler_entry(message, handler);
  state.ready = entry.ready;
  state.order_released = std::exchange(entry.order_released, std::nullopt);
  state.sent = at;
  ++message.deliveries;
  message.open.push_back(key);

  TraceContext context = message.context;
  context.span_id = state.span_id;
  deliveries_.emplace(key, std::move(state));
  return format_traceparent(context);
}

void DeliveryTracer::confirmed(ConnectionId connection, DeliveryId delivery, Outcome outcome,
                               std::optional<std::int64_t> nak_delay_ms, std::string_view reason, std::uint64_t wall_ns,
                               TimePoint now) {
  const auto found = deliveries_.find(DeliveryKey{connection, delivery});
  if (found == deliveries_.end()) return;
  confirm(found, outcome, nak_delay_ms, reason, Instant{now, wall_ns});
}

void DeliveryTracer::confirm(Deliveries::iterator it, Outcome outcome, std::optional<std::int64_t> nak_delay_ms,
                             std::string_view reason, Instant end) {
  const bool failed = outcome != Outcome::kAck;
  if (failed) {
    // The handler's next delivery of this message waits from here.
    const auto message = find_message(it->second.handle);
    if (message != messages_.end()) handler_entry(message->second, it->second.handler).ready = end;
  }
  end_delivery(it, outcome_name(outcome), failed, outcome == Outcome::kNak ? nak_delay_ms : std::nullopt, reason, end);
}

void DeliveryTracer::disconnected(ConnectionId connection, std::uint64_t wall_ns, TimePoint now) {
  auto it = deliveries_.lower_bound(DeliveryKey{connection, 0});
  while (it != deliveries_.end() && it->first.first == connection) {
    const auto next = std::next(it);  // ending one erases it alone
    confirm(it, Outcome::kDisconnect, std::nullopt, {}, Instant{now, wall_ns});
    it = next;
  }
}

void DeliveryTracer::order_released(MessageHandle handle, std::string_view handler, TimePoint now) {
  const auto found = find_message(handle);
  if (found == messages_.end()) return;
  handler_entry(found->second, handler).order_released = now;
}

void DeliveryTracer::dead_lettered(MessageHandle handle, std::string_view handler, std::uint64_t /*wall_ns*/) {
  const auto found = find_message(handle);
  if (found == messages_.end()) return;
  // A publish that failed is tried again with the same effect: the handler is named once.
  std::string& list = found->second.dead_lettered;
  for (std::size_t at = 0; at <= list.size();) {
    const std::size_t end = std::min(list.find(',', at), list.size());
    if (std::string_view(list).substr(at, end - at) == handler) return;
    at = end + 1;
  }
  if (!list.empty()) list += ',';
  list += handler;
}

void DeliveryTracer::settled(MessageHandle handle, SettleVerb verb, std::uint64_t wall_ns, TimePoint now) {
  const auto found = find_message(handle);
  if (found == messages_.end()) return;
  end_message(found, verb_name(verb), verb == SettleVerb::kTerm, Instant{now, wall_ns});
}

void DeliveryTracer::released(MessageHandle handle) {
  const auto found = find_message(handle);
  if (found == messages_.end()) return;
  for (const DeliveryKey& key : found->second.open) deliveries_.erase(key);
  --open_by_slot_[handle % kSlots];
  messages_.erase(found);
  ++dropped_open_;
}

void DeliveryTracer::end_delivery(Deliveries::iterator it, std::string_view outcome, bool failed,
                                  std::optional<std::int64_t> nak_delay_ms, std::string_view reason, Instant end) {
  DeliveryState& delivery = it->second;
  const auto message_it = find_message(delivery.handle);
  if (message_it != messages_.end()) {
    MessageState& message = message_it->second;
    auto& open = message.open;
    open.erase(std::remove(open.begin(), open.end(), it->first), open.end());

    SpanRecord span;
    span.trace_id = message.context.trace_id;
    span.span_id = delivery.span_id;
    span.parent_span_id = message.context.span_id;
    span.name = "deliver " + delivery.handler;
    span.kind = SpanKind::kClient;
    span.start_unix_nanos = delivery.ready.wall_ns;
    span.end_unix_nanos = std::max(end.wall_ns, delivery.ready.wall_ns);
    auto& attributes = span.attributes;
    attributes.reserve(10);
    add(attributes, "jetfan.handler", delivery.handler);
    add(attributes, "jetfan.attempt", as_int(delivery.attempt));
    add(attributes, "jetfan.connection", as_int(it->first.first));
    add(attributes, "jetfan.delivery", as_int(it->first.second));
    add(attributes, "jetfan.queued_ms", elapsed_ms(delivery.ready.steady, delivery.sent.steady));
    if (delivery.order_released) {
      add(attributes, "jetfan.order_wait_ms", elapsed_ms(delivery.ready.steady, *delivery.order_released));
    }
    add(attributes, "jetfan.in_handler_ms", elapsed_ms(delivery.sent.steady, end.steady));
    add(attributes, "jetfan.outcome", std::string(outcome));
    if (nak_delay_ms) add(attributes, "jetfan.nak_delay_ms", *nak_delay_ms);
    if (!reason.empty()) add(attributes, "jetfan.reason", std::string(reason));
    if (failed) {
      span.status_code = SpanStatusCode::kError;
      span.status_message = std::string(reason.empty() ? outcome : reason);
    }
    offer(std::move(span));
  }
  deliveries_.erase(it);
}

void DeliveryTracer::end_message(Messages::iterator it, std::string_view settle, bool error, Instant end) {
  // Its deliveries first: they end no later than the message, and need its state.
  while (!it->second.open.empty()) {
    const auto delivery = deliveries_.find(it->second.open.back());
    if (delivery == deliveries_.end()) {
      it->second.open.pop_back();  // cannot happen: both sides are updated together
      continue;
    }
    end_delivery(delivery, kAbandoned, true, std::nullopt, {}, end);
  }

  MessageState& message = it->second;
  SpanRecord span;
  span.trace_id = message.context.trace_id;
  span.span_id = message.context.span_id;
  span.parent_span_id = message.parent;
  span.name = "process " + message.subject;
  span.kind = SpanKind::kConsumer;
  span.start_unix_nanos = message.arrival.wall_ns;
  span.end_unix_nanos = std::max(end.wall_ns, message.arrival.wall_ns);
  auto& attributes = span.attributes;
  attributes.reserve(12);
  add(attributes, "messaging.system", std::string("nats"));
  add(attributes, "messaging.operation.name", std::string("process"));
  add(attributes, "messaging.operation.type", std::string("process"));
  add(attributes, "messaging.destination.name", message.subject);
  add(attributes, "messaging.message.id", std::to_string(message.stream_seq));
  add(attributes, "jetfan.stream_seq", as_int(message.stream_seq));
  add(attributes, "jetfan.server_deliveries", as_int(message.server_deliveries));
  add(attributes, "jetfan.recipients", static_cast<std::int64_t>(message.handlers.size()));
  add(attributes, "jetfan.deliveries", as_int(message.deliveries));
  add(attributes, "jetfan.settle", std::string(settle));
  if (!message.dead_lettered.empty()) add(attributes, "jetfan.dead_lettered", message.dead_lettered);
  if (error) {
    span.status_code = SpanStatusCode::kError;
    span.status_message = std::string(settle);
  }
  --open_by_slot_[it->first % kSlots];
  messages_.erase(it);
  offer(std::move(span));
}

void DeliveryTracer::offer(SpanRecord&& span) {
  ++spans_made_;
  sink_.offer(std::move(span));
}

}  // namespace jetfan
