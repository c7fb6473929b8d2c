#pragma once
// DeliveryTracer: turns one message's course through jetfan into OpenTelemetry spans. The daemon
// tells it what happened (a message arrived, went to a handler, was confirmed, dead-lettered,
// settled, released); it decides which messages are traced, keeps their open spans, and hands
// each finished one to a SpanSink (the SpanExporter's queue, in the daemon).
//
// Pure: no I/O, no clock, no randomness of its own. Times come in as values: `now` (steady) for
// every duration, `wall_ns` (unix nanoseconds) for the start and end written into a span. Both are
// kept for each point a span starts from, so the durations in its attributes are exact even if the
// wall clock steps; a span whose end wall time would come before its start (a step backwards) ends
// at its start. New trace and span ids come from the IdSource the caller owns.
//
// Sampling is parent-based. A message whose NATS header block carries a valid traceparent is traced
// iff that traceparent's sampled flag is set, as a child of it. One without (or with an invalid one)
// starts a new trace, kept iff sampled_by_ratio(new trace id, sample_ratio): 0 traces none of them,
// 1 all of them.
//
// The spans of one traced message, one trace:
//
//   [parent from the traceparent, if any]
//    └─ "process <subject>"  kind CONSUMER   arrived() .. settled()           the message span
//        ├─ "deliver <handler>" kind CLIENT  ready .. confirmed()              one per delivery
//        └─ "deliver <handler>" ...          (ready: the arrival, or the end of that handler's
//                                             previous failed delivery of this message)
//
// - The message span follows OpenTelemetry's messaging conventions for a consumer that processes
//   what it receives: operation "process", span name "{operation} {destination}", kind CONSUMER,
//   child of the producer's context. jetfan is that consumer: it holds the message from its arrival
//   to its settling verb. (The conventions ask for a low-cardinality destination in the name; the
//   subject is what identifies the stream's traffic here, as with other NATS instrumentations. If a
//   deployment's subjects carry ids, the name inherits them.)
//     messaging.system = "nats", messaging.operation.name = "process", messaging.operation.type =
//     "process", messaging.destination.name = subject, messaging.message.id = the stream sequence
//     as a decimal string, jetfan.stream_seq (int), jetfan.server_deliveries (int: the server's
//     delivery count of this copy), jetfan.recipients (int: distinct handlers delivered to),
//     jetfan.deliveries (int: deliveries made), jetfan.settle ("ack", "nak", "term", "none", or
//     "replaced" when the handle arrived again while open), jetfan.dead_lettered (comma list of
//     handlers, only if any). Status ERROR (message "term") for a TERM, otherwise UNSET: a NAK may
//     be a hand-back for room or a drain; a handler's failures are on its delivery spans.
// - A delivery span is a call jetfan makes to a handler process and that lasts until the handler
//   answers, so it is CLIENT (a PRODUCER span would end once the MSG was written). Its start is the
//   moment the message became ready for that handler, so its queueing inside jetfan is part of it;
//   delivered() returns the traceparent naming it, for the MSG to carry, and an instrumented
//   handler's own span becomes its child.
//     jetfan.handler, jetfan.attempt (int), jetfan.connection (int), jetfan.delivery (int),
//     jetfan.queued_ms (double: ready to MSG sent), jetfan.order_wait_ms (double: of that, the wait
//     behind an older message of its order key; only when it waited so), jetfan.in_handler_ms
//     (double: MSG sent to its end), jetfan.outcome ("ack", "nak", "term", "timeout", "disconnect", or "abandoned" when
//     the message was settled or replaced while it was in flight), jetfan.nak_delay_ms (int, when a NAK gave one),
//     jetfan.reason (when a NAK or TERM gave one). Status UNSET for ack, ERROR for every other outcome, its message the
//     reason if one was given, else the outcome.
//
// Memory: state is kept only for traced messages whose course is open (arrived, not yet settled,
// replaced or released) and traced deliveries in flight (delivered, not yet confirmed, abandoned or
// released): open_messages() <= traced messages held by the dispatcher (max_held), open_deliveries()
// <= traced deliveries in flight (the handlers' in-flight limits). A message's state holds its
// subject, one entry per distinct handler it went to, its dead-letter list and the keys of its open
// deliveries. Untraced messages, unknown handles and unknown (connection, delivery) pairs leave no
// state; settling a message drops all of its. Nothing grows with the number of messages passed.
//
// Thread: one owner (the daemon's io_context thread). Not thread-safe. The sink is called from
// inside these methods and must not call back into the tracer.

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "effect.hpp"
#include "otlp_json.hpp"
#include "time.hpp"
#include "trace_context.hpp"

namespace jetfan {

// Where finished spans go. offer() must not block for long or call back into the tracer.
class SpanSink {
 public:
  virtual void offer(SpanRecord&& span) = 0;

 protected:
  ~SpanSink() = default;
};

struct DeliveryTracerSettings {
  // For messages without a valid traceparent: the share of them traced, as new traces. 0: none.
  double sample_ratio = 0.0;
};

class DeliveryTracer {
 public:
  // How a delivery ended, as confirmed() is told.
  enum class Outcome { kAck, kNak, kTerm, kTimeout, kDisconnect };
  // The verb that settled a message; kNone: released without one (AckPolicy none, a drain).
  enum class SettleVerb { kAck, kNak, kTerm, kNone };

  // `ids` and `sink` must outlive the tracer.
  DeliveryTracer(DeliveryTracerSettings settings, IdSource& ids, SpanSink& sink);
  DeliveryTracer(const DeliveryTracer&) = delete;
  DeliveryTracer& operator=(const DeliveryTracer&) = delete;

  // A received copy of a message, now held as `handle`. Decides whether it is traced; if it is,
  // opens its message span and makes its arrival the ready time for every handler. A handle still
  // open ends first, settled as "replaced" (its open deliveries abandoned); each arrived() is a new
  // course, traced or not on its own.
  void arrived(MessageHandle handle, std::uint64_t stream_seq, std::string_view subject, std::string_view header_block,
               std::uint64_t server_deliveries, std::uint64_t wall_ns, TimePoint now);

  // The message went to `handler` as (connection, delivery), its `attempt`th delivery to that
  // handler (1 first). For a traced message, opens the delivery span and returns the traceparent
  // for the MSG to carry (the delivery span's id, sampled); nullopt if the message is not traced.
  // A pair already open is ended first as "abandoned".
  std::optional<std::string> delivered(MessageHandle handle, ConnectionId connection, DeliveryId delivery,
                                       std::string_view handler, std::uint64_t attempt, std::uint64_t wall_ns,
                                       TimePoint now);

  // The message, which waited behind an older one of its order key for `handler`, may go to it
  // now: that handler's next delivery of it says how long it waited so (jetfan.order_wait_ms).
  void order_released(MessageHandle handle, std::string_view handler, TimePoint now);

  // The delivery ended: its span ends and is offered. A failure (anything but kAck) makes its end
  // the ready time of that handler's next delivery of the message. `nak_delay_ms` only with a NAK
  // that gave one; `reason` empty if none was given. Unknown pairs are ignored.
  void confirmed(ConnectionId connection, DeliveryId delivery, Outcome outcome,
                 std::optional<std::int64_t> nak_delay_ms, std::string_view reason, std::uint64_t wall_ns,
                 TimePoint now);

  // Every delivery still open on `connection` ends as kDisconnect (a convenience: the dispatcher
  // need not list them).
  void disconnected(ConnectionId connection, std::uint64_t wall_ns, TimePoint now);

  // The message was dead-lettered for `handler`: added to the message span's jetfan.dead_lettered,
  // once however often it is told. (`wall_ns` is not used: a span attribute carries no time.)
  void dead_lettered(MessageHandle handle, std::string_view handler, std::uint64_t wall_ns);

  // The message is settled: its open deliveries end as "abandoned", then its span ends, all offered,
  // and its state is dropped. Unknown or untraced handles are ignored.
  void settled(MessageHandle handle, SettleVerb verb, std::uint64_t wall_ns, TimePoint now);

  // The handle's bytes are gone. A course still open (never settled) is dropped without offering
  // anything, since there is no time to end it at (counted in dropped_open()); call settled() with
  // kNone first to have it reported.
  void released(MessageHandle handle);

  // From the next arrival on (a reload of tracing.sample_ratio).
  void set_sample_ratio(double ratio) { settings_.sample_ratio = ratio; }
  double sample_ratio() const { return settings_.sample_ratio; }

  std::uint64_t traced_messages() const { return traced_messages_; }  // arrivals traced
  std::uint64_t spans_made() const { return spans_made_; }            // spans offered to the sink
  std::uint64_t dropped_open() const { return dropped_open_; }        // courses released while open
  std::size_t open_messages() const { return messages_.size(); }
  std::size_t open_deliveries() const { return deliveries_.size(); }

 private:
  using DeliveryKey = std::pair<ConnectionId, DeliveryId>;

  // A moment, on both clocks.
  struct Instant {
    TimePoint steady{};
    std::uint64_t wall_ns = 0;
  };

  struct HandlerEntry {
    std::string handler;
    Instant ready;  // when the message became ready for it: arrival, or its last failure's end
    std::optional<TimePoint> order_released;  // since ready, when an older one of its key let it go
  };

  struct MessageState {
    TraceContext context;  // trace id, the message span's id, flags
    std::optional<SpanId> parent;
    std::string subject;
    std::uint64_t stream_seq = 0;
    std::uint64_t server_deliveries = 0;
    Instant arrival;
    std::vector<HandlerEntry> handlers;  // distinct, in the order first delivered
    std::uint64_t deliveries = 0;
    std::string dead_lettered;  // comma list
    std::vector<DeliveryKey> open;
  };

  struct DeliveryState {
    MessageHandle handle = 0;
    SpanId span_id{};
    std::string handler;
    std::uint64_t attempt = 0;
    Instant ready;
    Instant sent;
    std::optional<TimePoint> order_released;
  };

  using Messages = std::unordered_map<MessageHandle, MessageState>;
  using Deliveries = std::map<DeliveryKey, DeliveryState>;

  // The open message of `handle`, or messages_.end(): the slot's count answers most lookups
  // without hashing (nearly every message, when few are sampled, is not open).
  Messages::iterator find_message(MessageHandle handle);
  HandlerEntry& handler_entry(MessageState& message, std::string_view handler);
  // The delivery ended with `outcome`: a failure makes `end` its handler's next ready time.
  void confirm(Deliveries::iterator it, Outcome outcome, std::optional<std::int64_t> nak_delay_ms,
               std::string_view reason, Instant end);
  // Ends the delivery, offers its span, forgets it (in the map and in its message's open list).
  void end_delivery(Deliveries::iterator it, std::string_view outcome, bool failed,
                    std::optional<std::int64_t> nak_delay_ms, std::string_view reason, Instant end);
  // Ends the message's open deliveries as abandoned, then the message span; forgets the message.
  void end_message(Messages::iterator it, std::string_view settle, bool error, Instant end);
  void offer(SpanRecord&& span);

  DeliveryTracerSettings settings_;
  IdSource& ids_;
  SpanSink& sink_;
  Messages messages_;
  // Open messages by handle % kSlots: a zero says a handle is not open, exactly.
  static constexpr std::size_t kSlots = 1024;
  std::array<std::uint32_t, kSlots> open_by_slot_{};
  Deliveries deliveries_;
  std::uint64_t traced_messages_ = 0;
  std::uint64_t spans_made_ = 0;
  std::uint64_t dropped_open_ = 0;
};

}  // namespace jetfan
