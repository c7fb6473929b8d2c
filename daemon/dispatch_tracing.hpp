#pragma once
// DispatchTracing: the Dispatcher's side of tracing (config `tracing:`). It tells the pure
// DeliveryTracer (observe/delivery_tracer.hpp) what the dispatcher sees, in the tracer's terms:
//   arrivals                      -> arrived()     the message span opens
//   the core's kDeliver           -> delivered()   a delivery span opens; its traceparent rides the MSG
//   a handler's ACK or TERM       -> confirmed()   read from the socket, when the core knew the delivery
//   the core's kFailed            -> confirmed()   NAK (with its delay and reason), ack_timeout, disconnect
//   the core's kDeadLetter        -> dead_lettered()
//   the core's kOrderReleased     -> order_released() the delivery to come says how long it waited
//   the core's kAck, kNak, kTerm  -> settled()     the message span ends
//   the core's kRelease           -> settled(kNone) if still open, then released()
// Finished spans go to a SpanSink: the daemon's SpanExporter, or a recording sink in tests.
//
// Off (no `tracing:`), the dispatcher holds none of this and pays a null test per arrival, effect
// and answer; on, an untraced message costs one sampling decision and a hash lookup per effect.
//
// It also says how tracing goes: its figures and the exporter's for status and metrics, and a
// warning when exports fail, at most once a minute (housekeeping()).
//
// Thread: the io_context thread, as the dispatcher. The sink is called from here; the exporter's
// counters are read from here while its own thread sends.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "config.hpp"
#include "delivery_tracer.hpp"
#include "effect.hpp"
#include "held_messages.hpp"
#include "protocol.hpp"
#include "span_exporter.hpp"
#include "status_snapshot.hpp"
#include "time.hpp"
#include "trace_context.hpp"

namespace jetfan {

class DispatchTracing {
 public:
  // `config` (its handlers' names, read as each effect is traced: a reload's new names), `sink` and
  // `exporter` (may be null: no export figures, no failure warnings) must outlive this. `seed` seeds
  // the new trace and span ids.
  DispatchTracing(const Config& config, double sample_ratio, std::uint64_t seed, SpanSink& sink,
                  const SpanExporter* exporter);

  // A routable message arrived (or a dead letter was redriven) and is held as `handle`.
  void arrived(MessageHandle handle, const HeldMessage& held, std::uint64_t wall_ns, TimePoint now);
  // One of the core's effects, before the dispatcher carries it out. For a kDeliver to `handler`,
  // the traceparent the MSG carries, or nullopt (not traced). `reason`: a kFailed NAK's words.
  std::optional<std::string> effect(const Effect& effect, std::size_t handler, std::string_view reason,
                                    std::uint64_t wall_ns, TimePoint now);
  // A handler's answer the core knew: ACK and TERM end their delivery span here (a NAK's ends with
  // the core's kFailed, which carries its delay).
  void answered(ConnectionId connection, const proto::Command& command, std::uint64_t wall_ns, TimePoint now);
  // Nothing traced is open: no effect or answer can make a span, and the dispatcher need not tell
  // them (nor read the clocks for them) until the next traced arrival.
  bool idle() const { return tracer_.open_messages() == 0 && tracer_.open_deliveries() == 0; }
  // A reload's tracing.sample_ratio, from the next arrival on.
  void set_sample_ratio(double ratio) { tracer_.set_sample_ratio(ratio); }

  // Warns (at most once a minute) of exports that failed since the last look, with the last error.
  void housekeeping(TimePoint now);
  void fill(StatusSnapshot& snapshot) const;

 private:
  const Config& config_;
  IdSource ids_;
  DeliveryTracer tracer_;
  const SpanExporter* exporter_;
  std::optional<TimePoint> last_warning_;
  std::uint64_t failures_told_ = 0;  // exporter's failed requests when the last warning went out
  std::uint64_t dropped_told_ = 0;   // and its spans dropped then
};

}  // namespace jetfan
