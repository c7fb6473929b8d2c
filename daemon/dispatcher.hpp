#pragma once
// Dispatcher: jetfan while it serves. It wires the pure pieces (DispatchCore, PullLedger,
// TopicMatcher, admission) to the I/O ones (JetStreamReader, the handler socket) and applies what
// the pure pieces decide. It exists only once the consumer is bound: everything it owns is whole
// from construction.
//
// Data path (ARCHITECTURE.md): cnats threads -> reader's Ingress (one post per burst) ->
// on_ingress: status replies to the PullLedger, messages (key, recipients) to DispatchCore::arrive
// -> Effects -> MSG frames appended to sessions, replies published by the reader -> one flush per
// session, pull requests topped up, the one timer re-armed. Handler commands take the same path
// from DispatchCore on.
//
// Thread: everything here runs on the io_context thread; it owns all dispatch state.

#include <spdlog/spdlog.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <deque>
#include <memory>
#include <memory_resource>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "arrival_observer.hpp"
#include "config.hpp"
#include "dispatch_core.hpp"
#include "handler_listener.hpp"
#include "handler_session.hpp"
#include "io_thread.hpp"
#include "jetstream_reader.hpp"
#include "log_rate_limiter.hpp"
#include "message_bytes.hpp"
#include "node_pool.hpp"
#include "pull_ledger.hpp"
#include "rate_window.hpp"
#include "reload_plan.hpp"
#include "serve_settings.hpp"
#include "status_snapshot.hpp"
#include "systemd_notifier.hpp"
#include "topic_pattern.hpp"

namespace jetfan {

class Dispatcher final : private SessionOwner {
 public:
  // Binds the handler socket (throws StartupError when it cannot). `config`, `reader`, `notifier`
  // and `live` must outlive the dispatcher; `live` must also outlive `io`.
  Dispatcher(boost::asio::io_context& io, const Config& config, ServeSettings settings, JetStreamReader& reader,
             SystemdNotifier& notifier, LiveBytes& live);
  ~Dispatcher();
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  // Accepts handlers and starts pulling.
  void start();
  // Stops pulling and accepting; deliveries in flight may finish within delivery.drain_timeout,
  // everything else is handed back. finish() follows by itself.
  void begin_drain();
  // Hands back everything still held, closes the connection to NATS and every session, and stops
  // the io_context. Idempotent.
  void finish();

  // One line for systemd's STATUS= and the like: what jetfan is doing and for whom.
  std::string status_line() const;
  bool serving() const { return state_ == State::kServing; }
  bool draining() const { return state_ == State::kDraining; }
  const CoreCounters& counters() const { return core_.counters(); }

  // For the control plane (daemon/dispatcher_control.cpp). The observer, if any, must outlive the
  // dispatcher or be unset first.
  void set_observer(ArrivalObserver* observer) { observer_ = observer; }
  // Fills what the dispatcher knows: state, figures, handlers and their instances.
  void fill_status(StatusSnapshot& snapshot, const RateWindow& rates, TimePoint now, std::int64_t now_unix_ms) const;
  std::vector<RateWindow::Named> named_stats() const;
  // Applies a reload: `config` (the one given at construction) already holds the new config, and
  // `settings` were derived from it. Precondition: serving. Returns lines for the log and reply.
  std::vector<std::string> apply_reload(const ReloadPlan& plan, ServeSettings settings);
  // The stream sequence of the last message that arrived; routing by a reload starts after it.
  std::uint64_t last_arrived_seq() const { return last_arrived_seq_; }

 private:
  struct Stored {
    SharedMessage message;
    std::string_view key;  // points into message's subject
    std::uint64_t stream_seq = 0;
    std::uint64_t deliveries = 0;
  };
  enum class State { kServing, kDraining, kDone };

  std::optional<std::string> on_hello(HandlerSession& session, const proto::Command& hello) override;
  void on_command(HandlerSession& session, const proto::Command& command) override;
  void on_input_consumed(HandlerSession& session) override;
  void on_failing(HandlerSession& session, const std::string& why) override;
  bool busy(const HandlerSession& session) const override;
  void on_closed(HandlerSession& session) override;

  void on_accepted(const std::shared_ptr<HandlerSession>& session);

  void on_ingress(std::vector<NatsMsgPtr>& incoming, bool reconnected);
  void on_status(const PullStatus& status, TimePoint now);
  // Takes the message from `message`; returns the bytes it costs to hold.
  std::uint64_t arrive(NatsMsgPtr& message, TimePoint now);
  // After every input to the core: apply and clear its effects, flush the sessions written to,
  // keep pulling, re-arm the timer, and finish a drain that has nothing left in flight.
  void after_input();
  void apply_effects();
  void report_failure(const Effect& effect, const Stored& stored);
  // Logs a warning unless too many like it came lately (they are counted and reported later).
  template <typename... Args>
  void warn_limited(const std::string& kind, fmt::format_string<Args...> format, Args&&... args);
  void top_up_pulls();
  // The consumer's leader may have changed: probe until it answers, then pull anew.
  void leader_unsure(TimePoint now);
  // Sends the consumer-info probe that is due, if any, and arms the timer for the next.
  void probe(TimePoint now);
  void arm_wakeup();
  // Called on each turn of the housekeeping and wakeup timers: a gap since the last one longer than
  // the housekeeping period is time jetfan did not run, given back to the deliveries in flight.
  void notice_stall(TimePoint now);
  void housekeeping();
  // When jetfan holds all it may and pulls no more: says who holds everyone up, and hands back the
  // backlog of handlers configured to (when_full: hand_back) past their share.
  void check_full(TimePoint now);
  std::string describe(const HandlerSession& session) const;
  // Observation (daemon/dispatcher_control.cpp).
  void observe(const Stored& stored, HandlerMask recipients);
  void observe_unroutable(std::string_view subject, std::uint64_t stream_seq, std::uint64_t deliveries,
                          natsMsg* message);
  static std::int64_t wall_now_ms();

  boost::asio::io_context& io_;
  const Config& config_;
  JetStreamReader& reader_;
  SystemdNotifier& notifier_;
  IoThread thread_;
  ServeSettings settings_;
  DispatchCore core_;
  PullLedger ledger_;
  TopicMatcher matcher_;
  HandlerListener listener_;
  boost::asio::steady_timer wakeup_, housekeeping_, drain_timer_, probe_timer_;
  std::optional<TimePoint> armed_for_;
  std::optional<TimePoint> last_turn_;     // notice_stall's last look
  std::optional<TimePoint> unsure_since_;  // the leader may have changed since
  TimePoint drain_deadline_{};
  std::vector<std::size_t> instances_;  // connected instances per handler
  std::unordered_map<ConnectionId, std::shared_ptr<HandlerSession>> sessions_;
  // Connections that have not said HELLO: their ids, and the order they came in (entries of
  // sessions since admitted or gone are skipped when met).
  std::unordered_set<ConnectionId> unidentified_;
  std::deque<ConnectionId> unidentified_order_;
  void prune_unidentified_order();
  ConnectionLimits connection_limits_;
  LiveBytes& live_;
  std::vector<std::shared_ptr<HandlerSession>> dirty_;
  NodePool stored_pool_;  // one node per held message, from a free list
  std::pmr::unordered_map<MessageHandle, Stored> stored_{&stored_pool_};
  std::vector<PullRequest> requests_;  // reused
  LogRateLimiter warnings_;
  LogRateLimiter full_warnings_;
  std::optional<TimePoint> full_since_;  // held has been max_held, with nothing settling, since
  std::uint64_t settled_when_full_ = 0;
  bool stalled_ = false;
  std::size_t stalled_by_ = 0;  // while stalled_: the handler holding everyone up
  MessageHandle next_handle_ = 1;
  State state_ = State::kServing;
  // Observation: set per batch, counted per message, read by fill_status.
  ArrivalObserver* observer_ = nullptr;
  std::int64_t wall_now_ns_ = 0;  // the wall clock at the current batch, for publish ages
  LatencyHistogram publish_age_;
  std::uint64_t last_arrived_seq_ = 0;
  std::uint64_t reconnects_ = 0;
  std::unordered_map<ConnectionId, std::int64_t> admitted_unix_ms_;
};

}  // namespace jetfan
