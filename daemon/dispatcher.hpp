#pragma once
// Dispatcher: jetfan while it serves. It wires the pure pieces to the I/O ones and applies what
// the pure pieces decide; each feature is a type of its own, which the Dispatcher owns and calls:
//   Router (core/router.hpp)            a message's recipients and order keys
//   DispatchCore (core/dispatch_core.hpp) who gets what, and every verb to the server
//   PullDriver (pull_driver.hpp)        pull requests kept up (core/PullLedger), probes, leader changes
//   HandlerTable (handler_table.hpp)    the connections, their admission, instances, socket I/O
//   DispatchLog (dispatch_log.hpp)      what is said of handlers and deliveries, in words and fields
//   HeldMessages (held_messages.hpp)    the bytes of what is held, by the core's handle
//   FullWatch (full_watch.hpp)          hand-backs, stall and blocked-key warnings when full
//   DeadLetterPublisher                 the core's kDeadLetter, published and answered
//   DeadLetterJobs (dead_letter_jobs.hpp) `dlq list` and `redrive` while they run
//   HoldReporter (hold_reporter.hpp)    the log lines of restart and gap holds
//   DispatchStatus (dispatch_status.hpp) the status snapshot
//   ConsumerWatch (consumer_watch.hpp)  the server's view of the consumer, polled and on demand
//   ReaderHealth (reader_health.hpp)    consuming as the only reader? (connection, other readers)
//   PinnedReader (pinned_reader.hpp)    a pinned_client group: the pin, keep-alives, step-down
//   UnreadableMessages (unreadable_messages.hpp) a message whose subject breaks the connection
//   DispatchTracing (dispatch_tracing.hpp) spans of each message and handler delivery, when on
//   LedgerWriter (ledger_writer.hpp)    the confirmation ledger's records, when on (config ledger:)
// It exists only once the consumer is bound: everything it owns is whole from construction.
//
// Its seams, and nothing else, reach outside it:
//   - Upstream (upstream.hpp): JetStream. JetStreamReader in the daemon, FakeUpstream in tests.
//   - Timekeeper (timekeeper.hpp): clocks and alarms. Real time in the daemon, moved by hand in
//     tests and the session fuzzer.
//   - handler sockets, handed to accept() (the daemon's HandlerListener, or socketpairs).
//   - observers, told and never asked: ArrivalObserver (arrivals, for `jetfan tail`) and
//     DispatcherTap (every input and effect of the core, for the checks of tests and the fuzzer).
// No file of the dispatcher includes a cnats header.
//
// Data path (ARCHITECTURE.md): Upstream -> on_message -> Router -> DispatchCore::arrive -> Effects
// -> MSG frames appended to sessions, verbs sent upstream -> one flush per session, pull requests
// topped up, the wakeup alarm re-armed. Handler commands take the same path from DispatchCore on.
//
// Thread: everything here runs on the io_context thread; it owns all dispatch state.

#include <spdlog/spdlog.h>

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <memory_resource>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "arrival_observer.hpp"
#include "config.hpp"
#include "consumer_watch.hpp"
#include "dead_letter_jobs.hpp"
#include "dead_letter_publisher.hpp"
#include "dead_letters.hpp"
#include "dispatch_core.hpp"
#include "dispatch_log.hpp"
#include "dispatch_status.hpp"
#include "dispatch_tracing.hpp"
#include "dispatcher_tap.hpp"
#include "full_watch.hpp"
#include "handler_publisher.hpp"
#include "handler_session.hpp"
#include "handler_table.hpp"
#include "held_messages.hpp"
#include "hold_reporter.hpp"
#include "io_thread.hpp"
#include "ledger_writer.hpp"
#include "log_rate_limiter.hpp"
#include "logging.hpp"
#include "message_bytes.hpp"
#include "node_pool.hpp"
#include "pinned_reader.hpp"
#include "pull_driver.hpp"
#include "rate_limited_log.hpp"
#include "rate_window.hpp"
#include "reader_health.hpp"
#include "reload_plan.hpp"
#include "router.hpp"
#include "serve_settings.hpp"
#include "status_snapshot.hpp"
#include "stream_message.hpp"
#include "systemd_notifier.hpp"
#include "timekeeper.hpp"
#include "unreadable_messages.hpp"
#include "upstream.hpp"

namespace jetfan {

// What the dispatcher tells its owner about its own course.
struct DispatcherHooks {
  std::function<void()> stop_accepting;  // draining: no new connection is wanted
  std::function<void()> finished;        // everything is handed back and closed: stop running
  // jetfan became the pinned client of its consumer's group (PinnedReader): read what the former
  // reader may have left unacked and call expect_outstanding() with it, before the first message is
  // routed. May wait for the server. Unset (unit tests): nothing is expected.
  std::function<void()> take_over;
};

// The routing step of `config`'s handlers (core/router.hpp), reading headers with proto's reader.
Router make_router(const Config& config);

class Dispatcher final : private SessionOwner,
                         private UpstreamListener,
                         private DeadLetterJobHost,
                         private UnreadableHost,
                         private PinHost {
 public:
  // `config`, `upstream`, `time`, `notifier` and `arena` must outlive the dispatcher; `arena` must
  // also outlive the io_context its sessions run on.
  Dispatcher(const Config& config, ServeSettings settings, Upstream& upstream, Timekeeper& time,
             SystemdNotifier& notifier, MessageBytesArena& arena, DispatcherHooks hooks);
  ~Dispatcher();
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  // Starts pulling and keeping house.
  void start();
  // The confirmation ledger's records of this durable (LedgerReader), read at start or at a
  // takeover: a message that comes again goes only to the handlers not named in its record (the
  // core's remember_confirmed). Those at or below `ack_floor` will not come again. Precondition:
  // config.ledger is set.
  void load_ledger(const std::vector<LedgerRecord>& records, std::uint64_t ack_floor);
  // Ordered handlers wait for what an earlier reader of the consumer may have left unacked: the
  // messages of the stream in (facts.ack_floor, facts.delivered], as `read` from the stream
  // (StreamReader::read), or nullopt when they could not all be read, when every ordered
  // delivery waits instead (docs/dispatch-rules.md R26-R31). Before start().
  void expect_outstanding(const ConsumerFacts& facts, const std::optional<std::vector<jetstream::StoredMessage>>& read);
  // What the consumer had delivered when it was bound: its delivery numbers go on from there, so a
  // jump at the first arrival is a loss too (docs/dispatch-rules.md R32). Before the first pull.
  void bound(const ConsumerFacts& facts) {
    core_.bound(facts.delivered_consumer_seq, facts.delivered);
    reader_health_.bound(facts.delivered_consumer_seq, time_.now());
    unreadable_.bound(facts.delivered_consumer_seq, facts.delivered);
  }
  // A new connection on the handler socket: it becomes a session of this dispatcher. Its id, or
  // nullopt when no connection is taken any more (draining; the socket is closed).
  std::optional<ConnectionId> accept(HandlerSession::Socket socket);
  // Stops pulling and accepting (hooks.stop_accepting); deliveries in flight may finish within delivery.drain_timeout,
  // everything else is handed back. finish() follows by itself.
  void begin_drain();
  // Hands back everything still held, closes the upstream and every session, and calls
  // hooks.finished. Idempotent.
  void finish();

  // One line for systemd's STATUS= and the like: what jetfan is doing and for whom.
  std::string status_line() const;
  bool serving() const override { return state_ == State::kServing; }
  // Why jetfan, serving, is not consuming as its durable's only reader (ReaderHealth); empty: it is.
  std::vector<std::string> not_consuming() const { return reader_health_.reasons(time_.now()); }
  // The status to exit with once finished: 0, or what ReaderHealth asked for (on_other_reader: exit).
  int exit_code() const { return reader_health_.exit_code().value_or(0); }
  bool draining() const { return state_ == State::kDraining; }
  const CoreCounters& counters() const { return core_.counters(); }

  // For the control plane (control_plane.hpp). The observer, if any, must outlive the
  // dispatcher or be unset first.
  void set_observer(ArrivalObserver* observer) { observer_ = observer; }
  // Fills what the dispatcher knows: state, figures, handlers and their instances.
  void fill_status(StatusSnapshot& snapshot, const RateWindow& rates, TimePoint now, std::int64_t now_unix_ms) const;
  std::vector<RateWindow::Named> named_stats() const { return status_.named_stats(); }
  // The consumer's info asked of the server now (jetfan status): ConsumerWatch::ask and set_sink.
  bool ask_consumer_info(std::uint64_t token) { return watch_.ask(token); }
  void set_consumer_sink(ConsumerWatch::Sink sink) { watch_.set_sink(std::move(sink)); }
  // Applies a reload: `config` (the one given at construction) already holds the new config, and
  // `settings` were derived from it. Precondition: serving. Returns lines for the log and reply.
  std::vector<std::string> apply_reload(const ReloadPlan& plan, ServeSettings settings);
  // Pauses or resumes the handler named so (jetfan pause / resume). nullopt: no such handler;
  // else what was done, in words. Lasts until a reload sets handlers[].paused again, or a restart.
  std::optional<std::string> set_paused(const std::string& handler, bool paused);
  bool paused(std::size_t handler) const { return core_.paused(handler); }
  // jetfan step-down (a pinned_client group): PinnedReader::step_down; nullopt without a group.
  struct StepDown {
    bool done = false;  // false: refused (standing by), `words` say why
    std::string words;
  };
  std::optional<StepDown> step_down();
  // jetfan dlq list / redrive: DeadLetterJobs::start (dead_letter_jobs.hpp).
  std::optional<std::string> start_dead_letter_job(const DeadLetterJob& job, DeadLetterJobOutput out);
  // jetfan unreadable: the messages with a subject the client cannot read found since start, and
  // an operator's look at stream seq `seq` (UnreadableMessages::examine; refused with AckPolicy all,
  // whose TERM needs the delivery's consumer sequence, which only a break tells).
  std::vector<std::string> unreadable_list() const { return unreadable_.list(); }
  std::optional<std::string> examine_unreadable(std::uint64_t seq, UnreadableMessages::Done done);
  // Per handler name: its redrives since start.
  const std::map<std::string, RedriveCounts>& redrive_counts() const { return jobs_.counts(); }
  // The stream sequence of the last message that arrived; routing by a reload starts after it.
  std::uint64_t last_arrived_seq() const { return last_arrived_seq_; }

  // Traces what it dispatches from now on (DispatchTracing), into `sink`; `exporter`, if not null,
  // is asked for its figures. Precondition: config.tracing is set. Both must outlive the dispatcher.
  void enable_tracing(SpanSink& sink, const SpanExporter* exporter, std::uint64_t seed);

  // For checkers (the session fuzzer, tests). The tap, if any, must outlive the dispatcher or be
  // unset first.
  void set_tap(DispatcherTap* tap) { tap_ = tap; }
  const DispatchCore& core() const { return core_; }
  const HandlerPublisher& publisher() const { return publisher_; }
  std::size_t instances(std::size_t handler) const override { return table_.instances(handler); }
  std::size_t messages_stored() const { return stored_.size(); }

 private:
  enum class State { kServing, kDraining, kDone };

  std::optional<std::string> on_hello(HandlerSession& session, const proto::Command& hello) override;
  void on_command(HandlerSession& session, const proto::Command& command) override;
  // An ACK, NAK, TERM or WIP of `session`'s delivery, to the core (an ACK is no longer held): logged,
  // and told to the tap and to tracing, whether it came from the handler or from release_acks.
  void confirm(HandlerSession& session, const proto::Command& command, TimePoint now);
  // The ledger (when on) hears of `session`'s confirmation of `seq` (ACK or TERM, taken by the
  // core) if the message is still owed to another handler.
  void note_confirmed(const HandlerSession& session, std::optional<std::uint64_t> seq, TimePoint now);
  // The names of the handlers that have confirmed `seq` by now, as the core knows (for the ledger).
  std::vector<std::string_view> confirmed_names(std::uint64_t seq) const;
  // A PUB (protocol version 3): to the HandlerPublisher, whose answer, when it has one at once, is
  // sent; a connection with as much waiting as it may have is read no more until answers come.
  void on_publish(HandlerSession& session, const proto::Command& pub);
  // Sends a PUB's answer to its connection, if it is still there, and reads it again if it was held.
  void send_publish_reply(const PublishReply& reply);
  // The held ACKs whose tied publishes are all answered: an ACK to the core, or a failure.
  void release_acks(TimePoint now);
  void on_input_consumed(HandlerSession& session) override;
  void on_failing(HandlerSession& session, const std::string& why) override;
  bool busy(const HandlerSession& session) const override;
  void on_closed(HandlerSession& session) override;

  void on_disconnected(std::string_view why) override;
  void on_reconnected() override;
  void on_message(InboundMessage&& message) override;
  void on_pull_status(const PullStatus& status) override;
  void on_probe_answer(bool answered) override;
  void on_published(std::uint64_t id, const PublishResult& result) override;
  void on_api_reply(std::uint64_t id, const ApiReply& reply) override;
  void on_batch_end() override;
  // The time of the batch from upstream under way (read once per batch).
  TimePoint batch_now();

  void on_alarm(Alarm alarm);
  // After every input to the core: apply and clear its effects, flush the sessions written to,
  // keep pulling, re-arm the timer, and finish a drain that has nothing left in flight.
  void after_input();
  void apply_effects();
  // What dead-letter jobs ask of jetfan (DeadLetterJobHost).
  TimePoint now() const override { return time_.now(); }
  bool api_request(std::uint64_t id, const std::string& subject, const std::string& body) override;
  bool redrive(std::size_t handler, const jetstream::StoredMessage& letter) override;
  // What UnreadableMessages asks of jetfan (UnreadableHost).
  void settle_unreadable(MessageBytesPtr bytes, std::uint64_t stream_seq) override;
  std::unordered_set<std::uint64_t> held_sequences() const override;
  std::vector<std::size_t> matching_handlers(std::string_view key, std::string_view headers) override;
  void top_up_pulls();
  // PinHost: the pin gained or lost.
  void take_over(TimePoint now) override;
  void stand_by(TimePoint now, bool refused) override;
  void leader_changed(TimePoint now) override { pulls_.leader_unsure(now); }
  void arm_wakeup();
  // Called on each turn of the housekeeping and wakeup timers: a gap since the last one longer than
  // the housekeeping period is time jetfan did not run, given back to the deliveries in flight.
  void notice_stall(TimePoint now);
  void housekeeping();
  // Observation: arrivals told to the ArrivalObserver (jetfan tail, no-recipient counts).
  void observe(const HeldMessage& stored, HandlerMask recipients);
  void observe_unroutable(const InboundMessage& message);
  // Counts and warns (rate-limited) of ordered recipients the message has no order key for.
  void note_without_order_key(HandlerMask handlers, std::uint64_t stream_seq, const MessageBytes& bytes,
                              std::string_view key);
  std::int64_t wall_now_ms() const { return time_.wall_now_ns() / 1'000'000; }

  const Config& config_;
  Upstream& upstream_;
  Timekeeper& time_;
  SystemdNotifier& notifier_;
  DispatcherHooks hooks_;
  IoThread thread_;
  ServeSettings settings_;
  DispatchCore core_;
  PullDriver pulls_;  // its ReaderHealth is reader_health_, below: only bound here
  Router router_;
  std::optional<TimePoint> armed_for_;  // the wakeup alarm's time
  std::optional<TimePoint> last_turn_;  // notice_stall's last look
  HoldReporter holds_{settings_.core.keepalive};
  TimePoint drain_deadline_{};
  HandlerTable table_;
  ConnectionId next_connection_ = 1;
  MessageBytesArena& arena_;
  std::vector<std::shared_ptr<HandlerSession>> dirty_;
  // The reasons of the NAKs read since effects were last applied, for the kFailed each causes (and
  // its log line); emptied when effects are applied. As many as one read's commands.
  struct NakReason {
    ConnectionId connection;
    std::uint64_t delivery;
    std::string reason;
  };
  std::vector<NakReason> nak_reasons_;
  std::size_t next_nak_reason_ = 0;  // the first of nak_reasons_ whose kFailed has not come yet
  HeldMessages stored_;
  RateLimitedLog warnings_;  // repeated warnings, each kind a few times per window
  DispatchLog log_;          // what is said of handlers and deliveries
  FullWatch full_;
  MessageHandle next_handle_ = 1;
  State state_ = State::kServing;
  // Observation: set per batch, counted per message, read by fill_status.
  ArrivalObserver* observer_ = nullptr;
  DispatcherTap* tap_ = nullptr;
  std::optional<TimePoint> batch_now_;  // while a batch from upstream is under way
  std::int64_t wall_now_ns_ = 0;        // the wall clock at the current batch, for publish ages
  std::uint64_t last_arrived_seq_ = 0;
  DeadLetterPublisher dead_letters_{config_, upstream_, core_, warnings_};
  HandlerPublisher publisher_{upstream_};
  DeadLetterJobs jobs_{config_, static_cast<DeadLetterJobHost&>(*this)};
  DispatchStatus status_{{config_, settings_, core_, pulls_.ledger(), table_, jobs_, full_, arena_, publisher_}};
  ConsumerWatch watch_{config_, upstream_};
  ReaderHealth reader_health_{config_, ConsumerWatch::kPollEvery, settings_.pin.has_value()};
  // jetfan's own figures for the check: arrivals, and (from pulls_ when an answer comes) the most
  // pull requests open since the answer before.
  OtherReaderCheck::Own own_;
  std::optional<PinnedReader> pinned_;  // set for a pinned_client group (settings_.pin)
  UnreadableMessages unreadable_{config_, upstream_, arena_, static_cast<UnreadableHost&>(*this)};
  std::unique_ptr<DispatchTracing> tracing_;  // set when tracing is on (enable_tracing)
  std::optional<LedgerWriter> ledger_;        // set when config.ledger is
};

}  // namespace jetfan
