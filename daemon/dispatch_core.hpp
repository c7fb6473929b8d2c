#pragma once
// DispatchCore: who gets which message, and when a message is settled at the server.
//
// A pure state machine: no I/O, no clock, no threads. Inputs are method calls carrying the current
// time as a value; outputs are Effects appended to effects(), which the caller applies (write a MSG
// to a socket, publish +ACK/-NAK/+TERM/+WPI, free a message's bytes) and then clears.
//
// The rules (issue 2, section 6):
//   - A message's recipients are the declared handlers whose patterns match its key, computed by the
//     caller when it arrives. Each recipient gets it on one connected instance, the least loaded,
//     never more than that handler's max_inflight at once per instance.
//   - A recipient with no connected instance holds the message: queued, not failed, kept alive.
//   - The message is acked at the server once every recipient has ACKed, terminated once every
//     recipient has settled and at least one said TERM, and nak'd (with a delay that grows with the
//     delivery count) once nothing is in flight for it and some recipient failed (NAK, ack_timeout,
//     or disconnect). Which recipients already settled is remembered, so a redelivery goes only to
//     those that still owe it. The memory is bounded by `remember`.
//   - No recipient: acked at once and counted.
//   - AckPolicy all: only the highest sequence below which everything is settled is acked.
//     AckPolicy none: nothing is sent to the server at all.
//   - Every message held is touched (+WPI) at least every `keepalive`, so the server never
//     redelivers a message this core still owns.
//   - Draining (shutdown): nothing new is dispatched; as soon as a message has nothing in flight it
//     is nak'd without delay; abandon_all() naks whatever is left.
//
// Thread: one owner (the daemon's io_context thread). Not thread-safe.

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <unordered_map>
#include <vector>

#include "config.hpp"
#include "topic_pattern.hpp"

namespace jetfan {

using TimePoint = std::chrono::steady_clock::time_point;
using MessageHandle = std::uint64_t;  // the caller's name for one received copy of a message
using ConnectionId = std::uint64_t;
using DeliveryId = std::uint64_t;     // names one delivery on one connection; the protocol's <id>

struct HandlerLimits {
  std::uint32_t max_inflight = 64;
  Duration ack_timeout{30000};
};

struct CoreSettings {
  std::vector<HandlerLimits> handlers;  // index = handler index, as in HandlerMask
  AckPolicy ack_policy = AckPolicy::kExplicit;
  Duration nak_delay{1000};
  Duration nak_delay_max{60000};
  std::size_t remember = 100000;
  Duration keepalive{10000};      // at most this long between touches of a held message
  std::int64_t max_deliver = -1;  // the consumer's MaxDeliver, -1 for unlimited
};

struct Effect {
  enum class Kind {
    kDeliver,  // send message to connection as delivery
    kAck,      // +ACK message at the server
    kNak,      // -NAK message at the server, redeliver after delay
    kTerm,     // +TERM message at the server
    kWip,      // +WPI message at the server
    kRelease,  // the core no longer refers to message; its bytes may go
  };
  Kind kind;
  MessageHandle message = 0;
  ConnectionId connection = 0;  // kDeliver
  DeliveryId delivery = 0;      // kDeliver
  Duration delay{0};            // kNak
};

struct Arrival {
  MessageHandle message = 0;
  std::uint64_t stream_seq = 0;
  std::uint64_t deliveries = 1;  // how often the server has delivered it, 1 the first time
  HandlerMask recipients = 0;
};

struct CoreCounters {
  std::uint64_t arrived = 0;
  std::uint64_t acked = 0;
  std::uint64_t naked = 0;
  std::uint64_t termed = 0;
  std::uint64_t no_recipient = 0;
  std::uint64_t already_held = 0;     // a redelivery of a message still held
  std::uint64_t deliveries = 0;       // MSGs sent to handlers
  std::uint64_t failed_nak = 0;       // deliveries failed by NAK
  std::uint64_t failed_timeout = 0;   // ... by ack_timeout
  std::uint64_t failed_disconnect = 0;// ... by the connection closing
  std::uint64_t unknown_confirmations = 0;
};

class DispatchCore {
 public:
  explicit DispatchCore(CoreSettings settings);

  void arrive(const Arrival& arrival, TimePoint now);
  // Precondition: handler < settings.handlers.size(); connection ids are never reused.
  void connect(ConnectionId connection, std::size_t handler, TimePoint now);
  void disconnect(ConnectionId connection, TimePoint now);

  // Confirmations from a connection. False: that delivery is not in flight there (late or bogus).
  bool ack(ConnectionId connection, DeliveryId delivery, TimePoint now);
  bool nak(ConnectionId connection, DeliveryId delivery, std::optional<Duration> delay, TimePoint now);
  bool term(ConnectionId connection, DeliveryId delivery, TimePoint now);
  bool wip(ConnectionId connection, DeliveryId delivery, TimePoint now);

  // Fails deliveries whose ack_timeout passed and touches held messages that are due.
  void tick(TimePoint now);
  // The earliest time tick() has work to do, if any.
  std::optional<TimePoint> next_wakeup() const;

  void begin_drain(TimePoint now);
  void abandon_all(TimePoint now);

  std::size_t held() const { return messages_.size() + settled_unacked_.size(); }
  std::size_t in_flight() const;
  bool is_in_flight(ConnectionId connection, DeliveryId delivery) const;
  const CoreCounters& counters() const { return counters_; }
  std::vector<Effect>& effects() { return effects_; }

 private:
  enum class Outcome { kAck, kTerm, kFail };

  struct Message {
    MessageHandle handle = 0;
    std::uint64_t deliveries = 1;
    HandlerMask recipients = 0;
    HandlerMask settled = 0;   // ACKed or TERMed, now or in an earlier delivery
    HandlerMask termed = 0;
    HandlerMask failed = 0;    // failed in this delivery
    HandlerMask queued = 0;    // waiting for an instance with room
    HandlerMask in_flight = 0;
    Duration nak_delay{0};     // the longest delay any failure asked for
    TimePoint touched;         // last time the server heard about it
  };
  struct Flight {
    std::uint64_t stream_seq;
    TimePoint deadline;
  };
  struct Connection {
    std::size_t handler;
    std::unordered_map<DeliveryId, Flight> flights;
  };
  struct Handler {
    HandlerLimits limits;
    std::vector<ConnectionId> connections;
    std::deque<std::uint64_t> queue;  // stream seqs; an entry whose queued bit is gone is skipped
  };
  struct Deadline {
    TimePoint at;
    ConnectionId connection;
    DeliveryId delivery;
    bool operator>(const Deadline& other) const { return at > other.at; }
  };
  struct Memory {
    HandlerMask settled = 0;
    HandlerMask termed = 0;
    std::uint64_t stamp = 0;
  };
  struct SettledUnacked {
    MessageHandle handle;
    TimePoint touched;
  };

  struct FlightRef {
    Connection* connection;
    std::unordered_map<DeliveryId, Flight>::iterator flight;
  };
  // The delivery in flight on a connection; nullopt (counted as unknown) when there is none.
  std::optional<FlightRef> find_flight(ConnectionId connection, DeliveryId delivery);
  bool complete(ConnectionId connection, DeliveryId delivery, Outcome outcome,
                std::optional<Duration> delay, TimePoint now);
  void fail(Message& message, std::size_t handler, std::optional<Duration> delay);
  void dispatch(std::size_t handler, TimePoint now);
  void maybe_finish(std::uint64_t stream_seq);
  void settle_at_server(std::uint64_t stream_seq, MessageHandle handle, bool terminate, TimePoint touched);
  void advance_ack_floor();
  void remember(std::uint64_t stream_seq, const Message& message);
  void forget(std::uint64_t stream_seq);
  Duration backoff(std::uint64_t deliveries) const;
  void emit(Effect::Kind kind, MessageHandle handle, Duration delay = Duration(0));
  bool to_server() const { return settings_.ack_policy != AckPolicy::kNone; }

  CoreSettings settings_;
  std::vector<Handler> handlers_;
  std::unordered_map<ConnectionId, Connection> connections_;
  std::unordered_map<std::uint64_t, Message> messages_;  // by stream seq
  std::priority_queue<Deadline, std::vector<Deadline>, std::greater<>> deadlines_;
  std::unordered_map<std::uint64_t, Memory> memory_;
  std::deque<std::pair<std::uint64_t, std::uint64_t>> memory_order_;  // (seq, stamp), oldest first
  std::uint64_t memory_stamp_ = 0;
  // AckPolicy all: sequences not yet settled (held, or nak'd and due back), and settled ones
  // waiting for everything below them to settle.
  std::set<std::uint64_t> unsettled_;
  std::map<std::uint64_t, SettledUnacked> settled_unacked_;
  std::optional<TimePoint> next_keepalive_;
  bool draining_ = false;
  DeliveryId next_delivery_ = 1;
  CoreCounters counters_;
  std::vector<Effect> effects_;
};

}  // namespace jetfan
