#pragma once
// DispatchCore: who gets which message, and what jetfan tells the server about each one.
//
// A pure state machine: no I/O, no clock, no threads. Inputs are method calls carrying the current
// time as a value; outputs are Effects appended to effects(), which the caller applies in order
// (write a MSG to a connection, publish +ACK/-NAK/+TERM/+WPI on the message's reply subject, free
// the message's bytes) and then clears. Every verb jetfan sends to the server comes from here.
//
// The rules are numbered in docs/dispatch-rules.md (R1-R45, invariants I1-I5); DispatchChecker
// checks those marked "checked" over every effect of the model test and the session fuzzer. In
// short:
//   - Delivery (R1-R3): recipients are fixed at arrival (core/Router); each gets the message on its
//     connected instance with the most room under its in-flight limit (max_inflight, or R49's);
//     without one it is queued, kept alive.
//   - Settling (R4-R8): +ACK once every recipient ACKed; +TERM once all settled and one said TERM;
//     -NAK once nothing is in flight and one failed, with the longest delay asked; a redelivery goes
//     only to those that still owe it (SettledRecord).
//   - Budgets (R9-R12, RetryBudget): a handler gives up after max_attempts, to a dead letter
//     (kDeadLetter, held until stored) or as its TERM (kGaveUp).
//   - No recipient: +ACK; no key: +TERM (R13, R14). Copies (R15, R16): one verb per copy; a copy of
//     a settled message is settled again.
//   - AckPolicy all (R17-R19, AckFloor): a verb only once everything below is settled; kTrim; the
//     floor is held after a gap or a restart. AckPolicy none (R20): nothing to the server.
//   - Order per key (R21-R25, OrderGate): one of a key at a time, oldest first; a message an ordered
//     handler owes is retried inside the core (RetryQueue), never handed back after a failure; one
//     handed back for room holds its keys while it is away (OrderAway).
//   - Restart (R26-R31, expect_outstanding, RestartWait and FloorHold) and gaps (R32-R35,
//     DeliveryGap): what may be outstanding or lost holds later messages of its keys until it came
//     back, the server shows it resent all, or a deadline.
//   - Reloads (R36, R37, HandlerRenumbering), keepalive and stalls (R38, R39), pause (R40), redrive
//     (R41-R43, RedriveTable), drain (R44, R45), standby (R46, R47), max_rate (R48, TokenBucket),
//     adaptive_inflight (R49, AdaptiveLimit: a connection's limit within max_inflight).
// Each of those types decides its part, purely; this is the one state machine that holds the
// messages and turns their decisions into effects.
// Memory: every structure is bounded by what is held and in flight, not by how many messages have
// passed. The deadline queue drops the entries of confirmed deliveries lazily, so it is rebuilt
// from the flights whenever it grows past twice their number (deadlines_queued() says how big).
//
// Thread: one owner (the daemon's io_context thread). Not thread-safe.

#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <memory_resource>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "ack_floor.hpp"
#include "ack_policy.hpp"
#include "adaptive_limit.hpp"
#include "delivery_gap.hpp"
#include "effect.hpp"
#include "handler_renumbering.hpp"
#include "histogram.hpp"
#include "node_pool.hpp"
#include "order_away.hpp"
#include "order_gate.hpp"
#include "redrive_table.hpp"
#include "restart_wait.hpp"
#include "retry_budget.hpp"
#include "retry_queue.hpp"
#include "settled_record.hpp"
#include "time.hpp"
#include "token_bucket.hpp"
#include "topic_pattern.hpp"

namespace jetfan {

struct HandlerLimits {
  std::uint32_t max_inflight = 0;  // > 0
  Duration ack_timeout{0};         // > 0
  RetryPolicy retry{};             // retry_budget.hpp; the default retries for ever, as before
  bool paused = false;             // gets nothing new; held for it as if it had no instance
  double max_rate = 0;             // deliveries a second at most (TokenBucket); 0: no limit
  // Each connection's limit adapts between min_inflight and max_inflight (AdaptiveLimit, R49);
  // otherwise it is max_inflight. Precondition when set: 1 <= min_inflight <= max_inflight.
  bool adaptive_inflight = false;
  std::uint32_t min_inflight = 1;
};

// Built from the config and the consumer's facts (config/serve_settings.hpp); no defaults here.
struct CoreSettings {
  std::vector<HandlerLimits> handlers;  // index = handler index, as in HandlerMask
  AckPolicy ack_policy = AckPolicy::kExplicit;
  Duration nak_delay{0};
  Duration nak_delay_max{0};
  std::size_t remember = 0;       // messages whose confirmations, and sequences settled, are remembered
  Duration keepalive{0};          // at most this long between touches of a held message; > 0
  std::int64_t max_deliver = -1;  // the consumer's MaxDeliver, -1 for unlimited
};

// What the core counted for one handler since it was declared (at start, or by a reload). Plain
// figures, updated on the per-message path without allocation or lookup.
struct HandlerStats {
  std::uint64_t delivered = 0;            // MSGs sent to its instances
  std::uint64_t acked = 0;                // ACKs it sent
  std::uint64_t termed = 0;               // TERMs it sent
  std::uint64_t failed_nak = 0;           // deliveries failed by its NAK
  std::uint64_t failed_timeout = 0;       // ... by its silence past ack_timeout
  std::uint64_t failed_disconnect = 0;    // ... by its connection closing
  LatencyHistogram confirmation_latency;  // from sending a MSG to its ACK, NAK or TERM
  // Its retry policy (RetryPolicy), see the rules in the header.
  AttemptsHistogram attempts;               // deliveries it needed per message it settled
  std::uint64_t dead_lettered_used_up = 0;  // dead letters stored: max_attempts used up
  std::uint64_t dead_lettered_term = 0;     // ... it said TERM
  std::uint64_t dead_letter_failures = 0;   // dead-letter publishes that failed (each is tried again)
  std::uint64_t gave_up = 0;                // max_attempts used up without a dead letter: a TERM for it
  // adaptive_inflight: cuts of a connection's limit, by AdaptiveLimit::Cut.
  std::uint64_t inflight_cuts[AdaptiveLimit::kCauses] = {0, 0, 0};
};

// A handler's load now. Computed on request by walking what is held, never kept per message.
struct HandlerLoad {
  std::size_t connections = 0;
  std::size_t in_flight = 0;
  std::size_t queued = 0;  // held for it, waiting for an instance with room
  std::size_t owed = 0;    // held and not yet confirmed by it: queued, in flight, or failed elsewhere
  std::optional<TimePoint> oldest_unconfirmed;  // arrival of the oldest held message it still owes
  bool rate_waiting = false;                    // messages for it wait for its max_rate (a token), not for room
  std::size_t inflight_limit = 0;               // its connections' in-flight limits, summed (AdaptiveLimit)
  // adaptive_inflight: the last cut of any of its connections' limits, and when.
  std::optional<AdaptiveLimit::Cut> last_cut;
  TimePoint last_cut_at{};
};

// A new handler table, from a reload. old_to_new[i] is the new index of the handler that had index
// i, or nullopt when it was removed; new indices nobody maps to are added handlers.
struct HandlerReindex {
  std::vector<std::optional<std::size_t>> old_to_new;
  std::vector<HandlerLimits> handlers;  // index = new handler index
  Duration nak_delay{0};
  Duration nak_delay_max{0};
};

struct ReindexOutcome {
  std::vector<std::size_t> released;  // per old handler index: held messages it owed, settled for it
  std::vector<ConnectionId> dropped;  // connections of removed handlers, forgotten by the core
};

// A dead letter given back to one handler (DispatchCore::redrive).
struct Redrive {
  MessageHandle message = 0;
  std::uint64_t id = 0;  // the caller's name for it (the dead letter's sequence in its stream); > 0
  std::size_t handler = 0;
  std::optional<std::string> order_key;  // for an ordered handler: the message's key
};

struct Arrival {
  MessageHandle message = 0;
  std::uint64_t stream_seq = 0;  // 0 (not known) is allowed only when unroutable
  std::uint64_t deliveries = 1;  // how often the server has delivered it, 1 the first time
  HandlerMask recipients = 0;
  bool unroutable = false;         // its subject has no key: no handler can be chosen
  std::vector<OrderKey> order;     // its ordered recipients, each with the message's order key for it
  std::uint64_t consumer_seq = 0;  // the consumer's number for this delivery; 0: not known (no gap check)
  std::uint64_t published_ns = 0;  // when the stream stored it, the server's wall clock; 0: not known
  std::int64_t wall_ns = 0;        // jetfan's wall clock at arrival; 0: not known
};

struct CoreCounters {
  std::uint64_t arrived = 0;     // copies the server delivered, of every kind
  std::uint64_t acked = 0;       // messages acked at the server
  std::uint64_t nakked = 0;      // messages nak'd (handed back for redelivery)
  std::uint64_t terminated = 0;  // messages terminated because a handler said TERM
  std::uint64_t no_recipient = 0;
  std::uint64_t unroutable = 0;         // terminated for want of a key
  std::uint64_t redelivered = 0;        // arrivals with a delivery count above 1
  std::uint64_t already_held = 0;       // a copy of a message still held
  std::uint64_t already_settled = 0;    // a copy of a message already settled, settled again
  std::uint64_t deliveries = 0;         // MSGs sent to handlers
  std::uint64_t failed_nak = 0;         // deliveries failed by NAK
  std::uint64_t failed_timeout = 0;     // ... by ack_timeout
  std::uint64_t failed_disconnect = 0;  // ... by the connection closing
  std::uint64_t unknown_confirmations = 0;
  std::uint64_t skipped_confirmed = 0;     // deliveries not made: the handler had confirmed it before
  std::uint64_t handed_back_for_room = 0;  // by hand_back_for_room
  std::uint64_t order_retries = 0;         // failures of messages an ordered handler owes, retried in the core
  std::uint64_t order_gave_up = 0;         // handed back and not back within order_away_hold(): order let go
  std::uint64_t order_restart_waits = 0;   // messages an earlier reader may have left outstanding, waited for
  std::uint64_t delivery_gaps = 0;         // jumps in the consumer sequence: deliveries lost on the way
  std::uint64_t deliveries_lost = 0;       // deliveries in those jumps
  std::uint64_t gap_holds_let_go = 0;      // holds after a jump that ended at gap_let_go(), not by proof
  std::uint64_t dead_lettered = 0;         // dead letters stored
  std::uint64_t dead_letter_failures = 0;  // dead-letter publishes that failed
  std::uint64_t gave_up = 0;               // used-up budgets without a dead letter
};

// One ordered handler's waiting now; computed on request.
struct OrderWait {
  OrderLoad load;
  std::optional<TimePoint> oldest;  // arrival of the oldest message held that waits behind its key
  std::string key;                  // that message's key ...
  std::uint64_t waits_for = 0;      // ... and the sequence it waits for (the oldest owed of the key)
};

class DispatchCore {
 public:
  explicit DispatchCore(CoreSettings settings);

  // Precondition: stream_seq != 0 unless unroutable.
  void arrive(const Arrival& arrival, TimePoint now);
  // What an earlier reader may have left outstanding (see the rules above). Call once, before the
  // first arrival; a later call replaces what is left of the first. Nothing to do when
  // outstanding.pending is 0. Under AckPolicy all it holds the ack floor too, ordered handlers or not
  // (outstanding.messages may then be empty).
  void expect_outstanding(const Outstanding& outstanding, TimePoint now);
  bool ack_floor_held() const { return floor_hold_.has_value(); }
  // What the consumer had delivered when jetfan bound it: the number of its last delivery, and the
  // highest stream sequence it delivered. Before the first arrival; without it, the first
  // arrival's number is taken as it is.
  void bound(std::uint64_t consumer_seq, std::uint64_t stream_seq);
  // The server answered a pull request sent at `asked_at` (an idle heartbeat, or its end): proof,
  // once a gap's hold is past gap_hold(), that what AckWait expired was redelivered, and after a
  // restart that what an earlier reader left was sent again (rules above).
  void heard(TimePoint asked_at, TimePoint now);
  // Whether a gap holds messages back (rules above), and above which stream sequence.
  bool gap_held() const { return gap_.held(); }
  std::uint64_t gap_floor() const { return gap_.floor(); }
  // Whether ordered handlers still wait for what an earlier reader left outstanding, or for what a
  // gap may have lost.
  bool awaiting_outstanding() const { return restart_.has_value() || gap_.held(); }
  // Precondition: handler < settings.handlers.size(); connection ids are never reused.
  void connect(ConnectionId connection, std::size_t handler, TimePoint now);
  void disconnect(ConnectionId connection, TimePoint now);

  // Confirmations from a connection. False: that delivery is not in flight there (late or bogus).
  bool ack(ConnectionId connection, DeliveryId delivery, TimePoint now);
  bool nak(ConnectionId connection, DeliveryId delivery, std::optional<Duration> delay, TimePoint now);
  bool term(ConnectionId connection, DeliveryId delivery, TimePoint now);
  bool wip(ConnectionId connection, DeliveryId delivery, TimePoint now);
  // The answer to a kDeadLetter effect's publish: stored by a stream (the handler has settled the
  // message), or not (tried again after a backoff; the message stays held for it). False: no such
  // publish is pending (answered before, or dropped by a drain or a reload).
  bool dead_letter_stored(std::uint64_t publish, TimePoint now);
  bool dead_letter_failed(std::uint64_t publish, TimePoint now);

  // Gives a dead letter back to its handler (dispatch_core_redrive.cpp; rules above). False, and
  // nothing changes (no effect; the caller keeps the message's bytes): draining, no such handler,
  // or redrive `id` is held already.
  bool redrive(const Redrive& redrive, TimePoint now);
  std::size_t redrives_held() const { return redrives_.size(); }

  // Fails deliveries whose ack_timeout passed and touches held messages that are due.
  void tick(TimePoint now);
  // The earliest time tick() has work to do, if any.
  std::optional<TimePoint> next_wakeup() const;
  // jetfan was not running for `stalled` (stopped, or its thread starved): every delivery in flight
  // gets that much longer before its ack_timeout fails it. A handler cannot answer a MSG jetfan had
  // not yet written, and jetfan cannot read an answer while it is not running; without this, the
  // first tick() after the stall would fail deliveries whose ACKs are waiting unread in the socket.
  void extend_deadlines(Duration stalled);

  // Stops dispatching and hands back what is not in flight; see the rules above.
  void begin_drain(TimePoint now, Duration handback_delay);
  // Hands back everything still held; what is in flight counts as failed. Precondition: draining.
  void abandon_all(TimePoint now);

  // The consumer was deleted (and perhaps made anew): what was remembered about its sequences no
  // longer holds.
  void forget_history();

  // Hands back to the server messages `handler` owes and has not in flight, until it owes at most
  // `keep` (those other handlers have in flight are left): those it gets unordered first, the oldest
  // first, then those it gets by an order key, the newest first (R23). Each counts as a failure of
  // `handler` for that message, handed back with nak_delay_max (sooner, it would only take back the
  // room it freed): the others' confirmations are remembered, so only it gets the message again,
  // and the server counts a delivery against MaxDeliver. Returns how many.
  std::size_t hand_back_for_room(std::size_t handler, std::size_t keep, TimePoint now);
  // Pauses or resumes a handler: paused, it gets nothing new and what it owes is held for it as for
  // a handler with no connected instance; deliveries in flight go on.
  // Precondition: handler < handler_count().
  void set_paused(std::size_t handler, bool paused, TimePoint now);
  bool paused(std::size_t handler) const { return handlers_[handler].limits.paused; }
  // Takes a new handler table (dispatch_core_reconfigure.cpp; rules above). Preconditions: not
  // draining; old_to_new has one entry per current handler and maps no two of them to one index;
  // handlers.size() <= kMaxHandlers.
  ReindexOutcome reconfigure(const HandlerReindex& reindex, TimePoint now);

  std::size_t handler_count() const { return handlers_.size(); }
  const HandlerStats& handler_stats(std::size_t handler) const { return handlers_[handler].stats; }
  // One entry per handler; walks everything held.
  std::vector<HandlerLoad> loads() const;
  // Arrival of the oldest message held, if any.
  std::optional<TimePoint> oldest_held() const;
  // One entry per handler (all zero for an unordered one); walks everything held.
  std::vector<OrderWait> order_waits() const;

  std::size_t held() const { return messages_.size() + floor_.waiting(); }
  // What counts against max_held: held(), less the settled messages waiting for a held ack floor.
  std::size_t held_for_room() const {
    return floor_hold_ || (gap_.held() && settings_.ack_policy == AckPolicy::kAll) ? messages_.size() : held();
  }
  std::size_t in_flight() const;
  std::size_t in_flight(ConnectionId connection) const;
  // Entries in the deadline queue, stale ones included: at most about twice in_flight() (or 1,024).
  std::size_t deadlines_queued() const { return deadlines_.size(); }
  bool draining() const { return draining_; }
  // A pinned_client reader that lost its pin (core/PinTracker): like a drain that ends. Everything
  // held and not in flight is handed back at once, redelivered after `handback_delay` (0 when no
  // request of this reader can take it back), nothing new is delivered, failures go back to the
  // server, and the order gate lets go of what goes back (order is the pinned reader's to keep);
  // deliveries in flight may still be confirmed. resume() ends it; the next arrival's delivery
  // number starts a new count (another reader had the deliveries between).
  void stand_by(TimePoint now, Duration handback_delay);
  void resume(TimePoint now);
  bool standing_by() const { return standing_by_; }
  bool is_in_flight(ConnectionId connection, DeliveryId delivery) const;
  // The stream seq of delivery `delivery` in flight on `connection`, if it is.
  std::optional<std::uint64_t> seq_in_flight(ConnectionId connection, DeliveryId delivery) const;
  // The handlers that confirmed stream seq `seq` in an earlier delivery, as the core remembers (a
  // copy arriving now goes only to the others): for `jetfan tail`, before the copy arrives.
  HandlerMask confirmed_before(std::uint64_t seq) const;
  // The handlers in `settled` confirmed stream seq `seq` in an earlier run (the confirmation ledger,
  // core/confirmation_ledger.hpp): a copy that arrives goes only to the others, as one handed back
  // in this run does (kept as that is, within `remember`). Ignored for a message held now: what this
  // run saw of it counts.
  void remember_confirmed(std::uint64_t seq, HandlerMask settled);
  const CoreCounters& counters() const { return counters_; }
  const RetryBudget& budget() const { return budget_; }
  std::vector<Effect>& effects() { return effects_; }

 private:
  enum class Outcome { kAck, kTerm, kNak, kTimeout };

  struct Message {
    MessageHandle handle = 0;
    std::uint64_t deliveries = 1;
    HandlerMask recipients = 0;
    HandlerMask settled = 0;  // ACKed or TERMed, now or in an earlier delivery
    HandlerMask termed = 0;
    HandlerMask failed = 0;  // failed in this delivery
    HandlerMask queued = 0;  // waiting for an instance with room
    HandlerMask in_flight = 0;
    Duration nak_delay{0};      // the longest delay any failure asked for
    TimePoint touched;          // last time the server heard about it
    TimePoint arrived;          // when this delivery of it came
    bool poison = false;        // a handler since removed said TERM: terminate it once all settle
    HandlerMask ordered = 0;    // recipients that get it in order of its key (in the gate)
    HandlerMask gated = 0;      // ordered recipients it waits for: an older one of its key comes first
    HandlerMask retrying = 0;   // failed recipients it goes to again after their delay, inside the core
    std::uint32_t retries = 0;  // retries inside the core, counted with deliveries for the backoff
  };
  struct Flight {
    std::uint64_t stream_seq;
    TimePoint deadline;
    TimePoint sent;
    bool kept_alive = false;  // a WIP came for it: its latency says nothing of the handler's load
  };
  struct Connection {
    std::size_t handler;
    std::pmr::unordered_map<DeliveryId, Flight> flights;
    AdaptiveLimit limit;  // its handler's max_inflight, or adaptive below it (R49)
  };
  struct Handler {
    HandlerLimits limits;
    std::vector<ConnectionId> connections;
    std::deque<std::uint64_t> queue;  // stream seqs; an entry whose queued bit is gone is skipped
    HandlerStats stats;
    TokenBucket rate;           // limits.max_rate
    bool rate_waiting = false;  // dispatch() stopped for want of a token: tick() goes on at next_token()
  };
  struct Deadline {
    TimePoint at;
    ConnectionId connection;
    DeliveryId delivery;
    bool operator>(const Deadline& other) const { return at > other.at; }
  };
  struct Confirmations {  // of a message handed back, for its redelivery
    HandlerMask settled = 0;
    HandlerMask termed = 0;
    std::uint64_t stamp = 0;
    bool poison = false;  // see Message::poison
  };
  struct FlightRef {
    Connection* connection;
    std::pmr::unordered_map<DeliveryId, Flight>::iterator flight;
  };

  void arrive_one(const Arrival& arrival, TimePoint now);  // arrive(), less what the restart needs
  void arrive_copy_of_settled(const Arrival& arrival, SettledRecord::Verb verb, TimePoint now);
  // The delivery in flight on a connection; nullopt (counted as unknown) when there is none.
  std::optional<FlightRef> find_flight(ConnectionId connection, DeliveryId delivery);
  bool complete(ConnectionId connection, DeliveryId delivery, Outcome outcome, std::optional<Duration> delay,
                TimePoint now);
  void fail(Message& message, std::size_t handler, std::optional<Duration> delay);
  // dispatch_core_retry.cpp: the retry policy. A failure counted against the handler's budget;
  // a TERM, which a handler with dead letters has published; giving a message up for a handler;
  // dead letters due to be tried again; dropping those pending when everything is abandoned.
  void failed_attempt(std::uint64_t stream_seq, Message& message, std::size_t handler, FailCause cause,
                      std::optional<Duration> delay, TimePoint now);
  bool dead_letter_term(std::uint64_t stream_seq, Message& message, std::size_t handler);
  void give_up(std::uint64_t stream_seq, Message& message, std::size_t handler, const GiveUpReason& reason);
  void retry_dead_letters(TimePoint now);
  void abandon_dead_letters();
  // Queues a flight's deadline; rebuilds the queue from the flights when stale entries pile up.
  void push_deadline(const Deadline& deadline);
  // The queue anew from the flights, each deadline moved by `shift`; drops every stale entry.
  void rebuild_deadlines(Duration shift);
  void dispatch(std::size_t handler, TimePoint now);
  static TokenBucket bucket_for(const HandlerLimits& limits);
  static AdaptiveLimit limit_for(const HandlerLimits& limits);
  // A delivery on `connection` ended so; `in_flight` were there before it ended (R49).
  void adapt_limit(Connection& connection, Outcome outcome, const Flight& flight, std::size_t in_flight, TimePoint now);
  void maybe_finish(std::uint64_t stream_seq, TimePoint now);
  void hand_back(std::uint64_t stream_seq, Message& message, TimePoint now);
  // Whether one of the handlers in `queued` has no connected instance.
  bool waits_for_an_instance(HandlerMask queued) const;
  // `handler` takes nothing more for now (its last instance went, or it was paused): what another
  // recipient failed no longer waits for it.
  void stop_waiting_for(std::size_t handler, TimePoint now);
  void settle_at_server(std::uint64_t stream_seq, MessageHandle handle, bool terminate, TimePoint touched);
  // AckPolicy all: nothing at or above this may be acked or terminated now (R19): the floor is held
  // after a restart (FloorHold), or a gap may have lost what lies above its floor (DeliveryGap).
  std::uint64_t floor_ceiling() const {
    return floor_hold_ ? 0 : gap_.held() ? gap_.floor() + 1 : AckFloor::kNoCeiling;
  }
  // AckPolicy all: the ceiling rose; what the floor passes goes out.
  void advance_ack_floor() { floor_.advance(floor_ceiling(), effects_); }
  void remember(std::uint64_t stream_seq, const Message& message);
  Duration backoff(std::uint64_t deliveries) const;
  Duration handback_delay(TimePoint now) const;
  void emit(Effect::Kind kind, MessageHandle handle, Duration delay = Duration(0));
  // Ordered delivery (dispatch_core_order.cpp).
  void order_arrived(const Arrival& arrival, Message& message, TimePoint now);
  // Whether `handler` may be given the message now; if not, it waits (gated) for its key.
  bool order_admits(std::size_t handler, std::uint64_t stream_seq, Message& message);
  void order_delivered(std::size_t handler, std::uint64_t stream_seq, const Message& message);
  // A delivery of the message to `handler` ended: settled it for the handler, or failed.
  void order_ended(std::size_t handler, std::uint64_t stream_seq, const Message& message, bool settled);
  // Whether the message stays held because an ordered recipient still owes it; schedules its
  // failures' retries. Precondition: nothing in flight for it, not draining.
  bool order_holds(std::uint64_t stream_seq, Message& message, TimePoint now);
  void order_handed_back(std::uint64_t stream_seq, const Message& message, Duration delay, bool last_delivery,
                         TimePoint now);
  // `stream_seq` may go to `handler` now, if it is held and waits for its key.
  void order_release(std::size_t handler, std::uint64_t stream_seq);
  // Once nothing holds every ordered delivery back: the oldest gated of each key may go (marks the
  // handlers that got some in `touched`, sized to the handlers; the caller dispatches them).
  void release_gated(std::vector<bool>& touched);
  void order_tick(TimePoint now);
  std::optional<TimePoint> order_next_wakeup() const;
  void order_reindex(const HandlerReindex& reindex, const HandlerRenumbering& renumbering);
  // Whether every ordered delivery waits for what an earlier reader left outstanding.
  bool restart_holds_all() const { return restart_ && restart_->holds_all(); }
  // The restart's wait ended: what is still away leaves the gate, and what waited may go.
  void restart_end(TimePoint now);
  void floor_hold_end();
  // A gap's hold ended (DeliveryGap): the ack floor and what waited for it may go on.
  void gap_ended(std::optional<DeliveryGap::End> why, TimePoint now);
  // Whether ordered handlers must not be given `stream_seq` for now: it is above a gap's floor.
  bool gap_holds(std::uint64_t stream_seq) const { return gap_.holds(stream_seq); }
  bool to_server() const { return settings_.ack_policy != AckPolicy::kNone; }
  // Redrives (dispatch_core_redrive.cpp) are held in messages_ under RedriveTable's keys, so the
  // message path serves them; these are the few places they differ.
  static bool is_redrive(std::uint64_t key) { return RedriveTable::is_redrive(key); }
  void finish_redrive(std::uint64_t key, Message& message, TimePoint now);

  // The nodes every held message needs (its entry in messages_, a flight per delivery, AckFloor's
  // entries) come from a free list rather than malloc. Declared first: it outlives every
  // container that uses it.
  NodePool pool_;
  CoreSettings settings_;
  std::vector<Handler> handlers_;
  std::unordered_map<ConnectionId, Connection> connections_;
  std::pmr::unordered_map<std::uint64_t, Message> messages_{&pool_};  // by stream seq
  // Min-heap; a confirmed delivery's entry stays until it comes up or the queue is rebuilt.
  std::priority_queue<Deadline, std::vector<Deadline>, std::greater<>> deadlines_;
  std::size_t rebuild_deadlines_at_ = kMinDeadlineRebuild;  // queue size that triggers a rebuild
  static constexpr std::size_t kMinDeadlineRebuild = 1024;
  std::unordered_map<std::uint64_t, Confirmations> confirmations_;
  RetryBudget budget_{settings_.remember};  // attempts and dead letters; kept like confirmations_
  std::deque<std::pair<std::uint64_t, std::uint64_t>> confirmations_order_;  // (seq, stamp), oldest first
  std::uint64_t confirmations_stamp_ = 0;
  SettledRecord settled_;
  // AckPolicy all: sequences not yet settled (held, or nak'd and due back), and settled ones
  // waiting for everything below them to settle; it appends what goes out to effects_.
  AckFloor floor_{&pool_};
  std::optional<TimePoint> next_keepalive_;
  bool draining_ = false;
  bool standing_by_ = false;
  bool stepping_aside() const { return draining_ || standing_by_; }
  TimePoint handback_until_{};  // draining: hand-backs are redelivered no earlier than this
  DeliveryId next_delivery_ = 1;
  CoreCounters counters_;
  std::vector<Effect> effects_;
  OrderGate gate_;
  // Retries inside the core, (handler, seq) by when; an entry whose retrying bit is gone is skipped.
  RetryQueue retries_;
  // Handed back while an ordered handler owed them: how long their keys wait for them.
  OrderAway away_{settings_.keepalive};
  RedriveTable redrives_;
  // What an earlier reader may have left outstanding, while ordered handlers wait for it (R26-R31).
  std::optional<RestartWait> restart_;
  // AckPolicy all: no +ACK or +TERM while this is set (R19, R31).
  std::optional<FloorHold> floor_hold_;
  DeliveryGap gap_{settings_.keepalive};  // deliveries lost on the way
};

}  // namespace jetfan
