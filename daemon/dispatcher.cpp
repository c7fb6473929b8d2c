#include "dispatcher.hpp"

#include <spdlog/spdlog.h>

#include "descriptors.hpp"
#include "jetstream_subject.hpp"
#include "protocol.hpp"

namespace jetfan {
namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

namespace {

// How often pull liveness is checked and pulls topped up without another reason to: well inside
// the heartbeat, rarely enough to cost nothing.
constexpr Duration kHousekeeping{500};
// A warning that repeats (a handler timing out on every message, say) is logged this many times per
// window, then counted; the count is logged when the window ends.
constexpr std::size_t kWarningBurst = 5;
constexpr Duration kWarningWindow{10000};
// Full with nothing settling this long is a stall worth a warning; it repeats this often.
constexpr Duration kStallAfter{5000};
constexpr Duration kFullWarningEvery{30000};
// housekeeping() runs every kHousekeeping while the io thread runs; a longer gap between two turns
// that look (housekeeping, the core's wakeup) means jetfan was stopped or starved meanwhile.
constexpr Duration kNotRunning{2 * kHousekeeping};
// At the end, what is buffered for the server (the last acks and hand-backs) gets this long to go.
constexpr Duration kFinalFlush{2000};
// Asked of systemd beyond what the drain and the final flush may take: closing sessions, exiting.
constexpr Duration kStopMargin{5000};
// A handler's own NAK delay is capped: the server takes nanoseconds in a signed 64-bit number.
constexpr std::uint64_t kMaxNakDelayMs = 1ULL << 40;

// The NATS/1.0 header block of a message, rebuilt from cnats's parsed headers; empty when it has none.
std::string header_block(natsMsg* message) {
  const char** keys = nullptr;
  int count = 0;
  if (natsMsgHeader_Keys(message, &keys, &count) != NATS_OK || count == 0) return {};
  std::string block = "NATS/1.0\r\n";
  for (int k = 0; k < count; ++k) {
    const char** values = nullptr;
    int value_count = 0;
    if (natsMsgHeader_Values(message, keys[k], &values, &value_count) == NATS_OK) {
      for (int v = 0; v < value_count; ++v) {
        block.append(keys[k]).append(": ").append(values[v]).append("\r\n");
      }
      free(values);  // cnats hands out the array, not the strings
    }
  }
  free(keys);
  block.append("\r\n");
  return block;
}

}  // namespace

Dispatcher::Dispatcher(asio::io_context& io, const Config& config, ServeSettings settings, JetStreamReader& reader,
                       SystemdNotifier& notifier, LiveBytes& live)
    : io_(io),
      config_(config),
      reader_(reader),
      notifier_(notifier),
      settings_(std::move(settings)),
      core_(settings_.core),
      ledger_(settings_.pull),
      listener_(io, config.socket, *this),
      wakeup_(io),
      housekeeping_(io),
      drain_timer_(io),
      probe_timer_(io),
      instances_(config.handlers.size(), 0),
      connection_limits_{config.socket.max_connections, config.socket.max_unidentified},
      live_(live),
      warnings_(kWarningBurst, kWarningWindow),
      full_warnings_(1, kFullWarningEvery) {
  for (std::size_t h = 0; h < config_.handlers.size(); ++h) {
    for (const auto& pattern : config_.handlers[h].patterns) matcher_.add(pattern, h);
  }
  // Out of descriptors, jetfan could not even reconnect to NATS: connections stop short of it.
  const std::size_t budget =
      connection_budget(raise_descriptor_limit(), open_descriptors(), defaults::kReservedDescriptors);
  if (budget < connection_limits_.max_connections) {
    spdlog::warn(
        "socket.max_connections is {}, but the file descriptor limit leaves room for {} handler "
        "connections; serving at most {} (raise LimitNOFILE= to allow more)",
        connection_limits_.max_connections, budget, budget);
    connection_limits_.max_connections = budget;
  }
  for (const auto& handler : config_.handlers) {
    if (handler.allow.empty()) {
      spdlog::info("handler \"{}\" has no allow list: any process that can open {} may be it", handler.name,
                   config_.socket.path);
    }
  }
}

Dispatcher::~Dispatcher() {
  reader_.stop_delivering();
  // Sessions refer to this object as their owner: close them before it goes.
  auto sessions = std::move(sessions_);
  for (auto& [id, session] : sessions) session->close();
}

void Dispatcher::start() {
  JETFAN_ON_IO_THREAD(thread_);
  listener_.start([this](const std::shared_ptr<HandlerSession>& session) { on_accepted(session); });
  reader_.subscribe([this](std::vector<NatsMsgPtr>& incoming, bool reconnected) { on_ingress(incoming, reconnected); });
  top_up_pulls();
  housekeeping();
}

void Dispatcher::on_ingress(std::vector<NatsMsgPtr>& incoming, bool reconnected) {
  JETFAN_ON_IO_THREAD(thread_);
  const TimePoint now = Clock::now();
  wall_now_ns_ =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  // The server forgets pull requests when it restarts, and cnats does not re-send them.
  if (reconnected) {
    ++reconnects_;
    if (ledger_.outstanding() > 0)
      spdlog::info("nats: dropping {} outstanding pull request(s): reconnected", ledger_.outstanding());
    ledger_.on_reconnect(now);
    leader_unsure(now);
  }
  for (auto& message : incoming) {
    const Incoming in = reader_.classify(message.get());
    switch (in.kind) {
      case Incoming::Kind::kPullStatus:
        on_status(in.status, now);
        continue;
      case Incoming::Kind::kProbeAnswer:
        if (ledger_.on_probe_answer(in.answered, now)) {
          spdlog::info("nats: the consumer answers again ({}ms after it may have changed leader); pulling anew",
                       unsure_since_ ? std::chrono::duration_cast<Duration>(now - *unsure_since_).count() : 0);
          unsure_since_.reset();
        }
        continue;
      case Incoming::Kind::kMessage:
        break;
    }
    ledger_.on_message(now, arrive(message, now));
  }
  // Full now, a backlog set to go back goes at once, before it takes the room of new messages.
  if (state_ == State::kServing && ledger_.full(core_.held(), live_.bytes)) check_full(now);
  after_input();
}

void Dispatcher::on_status(const PullStatus& status, TimePoint now) {
  if (ledger_.on_status(status.pull, status.code, status.description, now) != PullLedger::StatusOutcome::kUnexpected) {
    return;
  }
  spdlog::warn("nats: pull request {} answered with status {} ({}); pulling anew once the consumer answers",
               status.pull, status.code, status.description);
  leader_unsure(now);
  if (status.description.find("Consumer Deleted") != std::string_view::npos) {
    spdlog::error(
        "nats: consumer \"{}\" of stream \"{}\" was deleted; jetfan keeps pulling in case its controller "
        "makes it anew, and forgets what it remembered of the old one's sequences",
        config_.consumer.durable, config_.consumer.stream);
    core_.forget_history();
  }
}

std::uint64_t Dispatcher::arrive(NatsMsgPtr& message, TimePoint now) {
  const std::string_view subject = natsMsg_GetSubject(message.get());
  const auto ack = parse_ack_subject(natsMsg_GetReply(message.get()));
  const auto key = key_of(subject, config_.key.strip_prefix);
  const MessageHandle handle = next_handle_++;
  if (ack && ack->published_ns != 0) {
    publish_age_.observe(std::chrono::nanoseconds(wall_now_ns_ - static_cast<std::int64_t>(ack->published_ns)));
  }
  if (!ack || !key) {
    spdlog::error(
        "message on subject \"{}\" (stream seq {}) has no key: it does not start with key.strip_prefix "
        "\"{}\". Terminated it (+TERM): no handler can be chosen for it, so redelivering it would loop.",
        subject, ack ? std::to_string(ack->stream_seq) : "?", config_.key.strip_prefix);
    if (observer_) observe_unroutable(subject, ack ? ack->stream_seq : 0, ack ? ack->deliveries : 1, message.get());
    stored_.emplace(
        handle, Stored{make_message_bytes(std::move(message), std::string(), live_), {}, ack ? ack->stream_seq : 0, 0});
    core_.arrive(Arrival{handle, ack ? ack->stream_seq : 0, ack ? ack->deliveries : 1, 0, true}, now);
    return 0;
  }
  last_arrived_seq_ = ack->stream_seq;
  std::string headers = header_block(message.get());
  auto bytes = make_message_bytes(std::move(message), std::move(headers), live_);
  const std::uint64_t size = bytes->size();
  const auto placed = stored_.emplace(handle, Stored{std::move(bytes), *key, ack->stream_seq, ack->deliveries}).first;
  const HandlerMask recipients = matcher_.match(*key);
  if (observer_) observe(placed->second, recipients);
  core_.arrive(Arrival{handle, ack->stream_seq, ack->deliveries, recipients, false}, now);
  return size;
}

void Dispatcher::after_input() {
  apply_effects();
  if (state_ == State::kServing) top_up_pulls();
  if (state_ == State::kDraining && core_.in_flight() == 0) {
    finish();
    return;
  }
  arm_wakeup();
}

void Dispatcher::leader_unsure(TimePoint now) {
  if (!unsure_since_) unsure_since_ = now;
  ledger_.on_leader_unsure(now);
  probe(now);
}

void Dispatcher::probe(TimePoint now) {
  if (state_ != State::kServing) return;
  if (const auto id = ledger_.take_probe(now)) reader_.send_probe(*id);
  const auto next = ledger_.next_probe();
  if (!next) return;
  probe_timer_.expires_at(*next);
  probe_timer_.async_wait([this](const boost::system::error_code& error) {
    if (error) return;
    probe(Clock::now());
    after_input();
  });
}

void Dispatcher::top_up_pulls() {
  if (!ledger_.wants_more(core_.held())) return;
  requests_.clear();
  ledger_.top_up(core_.held(), live_.bytes, Clock::now(), requests_);
  for (const auto& request : requests_) {
    if (!reader_.send_pull(request)) ledger_.cancel(request.id);
  }
}

void Dispatcher::apply_effects() {
  auto& effects = core_.effects();
  std::size_t kept_alive = 0;
  for (const Effect& effect : effects) {
    auto stored = stored_.find(effect.message);
    if (stored == stored_.end()) continue;
    natsMsg* message = stored->second.message->message();
    switch (effect.kind) {
      case Effect::Kind::kDeliver: {
        auto session = sessions_.find(effect.connection);
        if (session == sessions_.end()) break;
        const auto& s = stored->second;
        session->second->send_msg(effect.delivery, s.key, s.stream_seq, s.deliveries, s.message);
        if (dirty_.empty() || dirty_.back() != session->second) dirty_.push_back(session->second);
        break;
      }
      case Effect::Kind::kAck:
        reader_.ack(message);
        break;
      case Effect::Kind::kNak:
        reader_.nak(message, effect.delay);
        break;
      case Effect::Kind::kTerm:
        reader_.term(message);
        break;
      case Effect::Kind::kWip:
        reader_.wip(message);
        ++kept_alive;
        break;
      case Effect::Kind::kRelease:
        stored_.erase(stored);
        break;
      case Effect::Kind::kFailed:
        report_failure(effect, stored->second);
        break;
    }
  }
  effects.clear();
  if (kept_alive > 0) spdlog::debug("kept {} held message(s) alive at the server (+WPI)", kept_alive);
  // A flush can close a session (max_output_buffer), and the close applies effects again, which
  // may add to and flush dirty_: walk a list of our own.
  std::vector<std::shared_ptr<HandlerSession>> dirty;
  dirty.swap(dirty_);
  for (auto& session : dirty) session->flush();
  // The list's storage goes back for the next call, unless a re-entered call has made a new one.
  dirty.clear();
  if (dirty_.empty()) dirty_.swap(dirty);
}

template <typename... Args>
void Dispatcher::warn_limited(const std::string& kind, fmt::format_string<Args...> format, Args&&... args) {
  const auto verdict = warnings_.allow(kind, Clock::now());
  if (!verdict.log) return;
  std::string line = fmt::format(format, std::forward<Args>(args)...);
  if (verdict.suppressed_before > 0) {
    line += fmt::format(" ({} more like it were not logged: {})", verdict.suppressed_before, kind);
  }
  spdlog::warn("{}", line);
}

void Dispatcher::report_failure(const Effect& effect, const Stored& stored) {
  const auto session = sessions_.find(effect.connection);
  const std::string name = session != sessions_.end() ? session->second->handler_name() : "?";
  const std::string who = session != sessions_.end() ? describe(*session->second)
                                                     : "(connection " + std::to_string(effect.connection) + ")";
  warn_limited("failed deliveries to handler \"" + name + "\": " + to_string(effect.cause),
               "handler {}: delivery {} of stream seq {} (subject \"{}\") failed: {}. It goes back to the server for "
               "redelivery to this handler (NAK with a growing delay) once no other handler has it in flight.",
               who, effect.delivery, stored.stream_seq, stored.message->subject(), to_string(effect.cause));
}

void Dispatcher::arm_wakeup() {
  const auto wake = core_.next_wakeup();
  if (!wake || (armed_for_ && *armed_for_ <= *wake)) return;
  armed_for_ = wake;
  wakeup_.expires_at(*wake);
  wakeup_.async_wait([this](const boost::system::error_code& error) {
    if (error) return;
    armed_for_.reset();
    const TimePoint now = Clock::now();
    notice_stall(now);  // before tick(): a stall must not fail what jetfan could not read
    core_.tick(now);
    after_input();
  });
}

std::string Dispatcher::status_line() const {
  std::size_t connected = 0;
  std::size_t missing = 0;
  for (const std::size_t count : instances_) {
    connected += count;
    missing += count == 0;
  }
  const std::size_t in_flight = core_.in_flight();
  if (state_ != State::kServing) return fmt::format("draining: {} deliveries in flight", in_flight);
  std::string line = fmt::format("serving: {} handler connection(s); {} message(s) held, {} in flight", connected,
                                 core_.held(), in_flight);
  if (missing > 0) line += fmt::format("; {} declared handler(s) with no instance", missing);
  return line;
}

void Dispatcher::notice_stall(TimePoint now) {
  if (last_turn_ && now - *last_turn_ > kNotRunning) {
    // Stopped (SIGSTOP) or starved: MSGs queued before the stall went out only now, and answers to
    // them wait unread in the sockets. None of that time counts against a handler's ack_timeout.
    core_.extend_deadlines(std::chrono::ceil<Duration>(now - *last_turn_));
  }
  if (!last_turn_ || *last_turn_ < now) last_turn_ = now;
}

void Dispatcher::housekeeping() {
  notice_stall(Clock::now());
  notifier_.status(status_line());
  if (state_ == State::kDraining) {
    const Duration left = std::max(Duration(0), std::chrono::ceil<Duration>(drain_deadline_ - Clock::now()));
    notifier_.extend_timeout(left + kFinalFlush + kStopMargin);
  }
  for (const auto& [kind, count] : warnings_.take_expired(Clock::now())) {
    spdlog::warn("{} more like the last warning were not logged in the last {}s: {}", count,
                 kWarningWindow.count() / 1000, kind);
  }
  if (ledger_.check_liveness(Clock::now()) == PullLedger::Liveness::kSilent) {
    spdlog::info("nats: dropped the outstanding pull requests: no heartbeat from the server for {} heartbeats",
                 PullLedger::kMissedHeartbeats);
    leader_unsure(Clock::now());
  }
  if (state_ == State::kServing) {
    check_full(Clock::now());
    apply_effects();
    top_up_pulls();
  }
  if (state_ == State::kDone) return;
  housekeeping_.expires_after(kHousekeeping);
  housekeeping_.async_wait([this](const boost::system::error_code& error) {
    if (!error) housekeeping();
  });
}

void Dispatcher::check_full(TimePoint now) {
  const std::size_t max_held = settings_.pull.max_held;
  const auto& c = core_.counters();
  const std::uint64_t settled = c.acked + c.terminated + c.nakked + c.no_recipient;
  if (!ledger_.full(core_.held(), live_.bytes)) {
    if (stalled_)
      spdlog::info(
          "holding {} messages of {} bytes, below max_held ({}) and max_held_bytes ({}) again: "
          "pulling again",
          core_.held(), live_.bytes, max_held, settings_.pull.max_held_bytes);
    full_since_.reset();
    stalled_ = false;
    return;
  }
  const auto loads = core_.loads();
  // Full by count, what is held is max_held; full by bytes, it may be fewer, bigger messages.
  const std::size_t share = std::max<std::size_t>(1, core_.held() / loads.size());
  std::size_t handed_back = 0;
  for (std::size_t h = 0; h < loads.size(); ++h) {
    if (config_.handlers[h].when_full != WhenFull::kHandBack || loads[h].owed <= share) continue;
    const std::size_t handed = core_.hand_back_oldest(h, share, now);
    handed_back += handed;
    if (handed > 0) {
      warn_limited("hand-backs for room of handler \"" + config_.handlers[h].name + "\"",
                   "the consumer is full and handler \"{}\" owed {} messages, more than its share of {}: handed back "
                   "its {} oldest to the server (when_full: hand_back); only it gets them again, each a delivery "
                   "more against MaxDeliver",
                   config_.handlers[h].name, loads[h].owed, share, handed);
    }
  }
  if (handed_back > 0) return;
  // Full is normal under load (it is how jetfan pushes back); full with nothing settling is a stall.
  if (!full_since_ || settled != settled_when_full_) {
    full_since_ = now;
    settled_when_full_ = settled;
    return;
  }
  if (now - *full_since_ < kStallAfter) return;
  // The one holding everyone up: most messages waiting for it and not in flight (working on them
  // is not being stuck), then most owed.
  std::size_t worst = 0;
  auto waiting = [&](std::size_t h) { return loads[h].owed - loads[h].in_flight; };
  for (std::size_t h = 1; h < loads.size(); ++h) {
    if (waiting(h) > waiting(worst) || (waiting(h) == waiting(worst) && loads[h].owed > loads[worst].owed)) {
      worst = h;
    }
  }
  const bool first = !stalled_;
  stalled_ = true;
  stalled_by_ = worst;
  if (!full_warnings_.allow("full", now).log && !first) return;
  const auto& b = loads[worst];
  const auto age =
      b.oldest_unconfirmed ? std::chrono::duration_cast<std::chrono::seconds>(now - *b.oldest_unconfirmed).count() : 0;
  const std::string limit = core_.held() >= max_held
                                ? "max_held (" + std::to_string(max_held) + ")"
                                : "max_held_bytes (" + std::to_string(settings_.pull.max_held_bytes) + ")";
  spdlog::warn(
      "jetfan holds {} messages ({} bytes), all that {} allows, and none has settled for {}s, so it pulls "
      "no more: handler \"{}\" owes {} of them ({} in flight), the oldest for {}s, with {} instance(s) "
      "connected. Every other handler waits with it. Start or unstick it, or set when_full: hand_back for "
      "it to hand its backlog back to the server.",
      core_.held(), live_.bytes, limit, std::chrono::duration_cast<std::chrono::seconds>(now - *full_since_).count(),
      config_.handlers[worst].name, b.owed, b.in_flight, age, b.connections);
}

std::string Dispatcher::describe(const HandlerSession& session) const {
  return "\"" + session.handler_name() + "\" (" + session.peer() + ")";
}

void Dispatcher::on_accepted(const std::shared_ptr<HandlerSession>& session) {
  JETFAN_ON_IO_THREAD(thread_);
  sessions_.emplace(session->id(), session);
  session->start();
  switch (admit_connection(sessions_.size() - 1, unidentified_.size(), connection_limits_)) {
    case ConnectionVerdict::kAccept:
      break;
    case ConnectionVerdict::kAcceptEvictingOldestUnidentified:
      while (!unidentified_order_.empty()) {
        const ConnectionId oldest = unidentified_order_.front();
        unidentified_order_.pop_front();
        const auto found = sessions_.find(oldest);
        if (found != sessions_.end() && unidentified_.count(oldest) && !found->second->ending()) {
          found->second->fail("evicted: " + std::to_string(connection_limits_.max_unidentified) +
                              " newer connections have not said HELLO either (socket.max_unidentified)");
          break;
        }
      }
      break;
    case ConnectionVerdict::kRefuse:
      session->fail("jetfan has its " + std::to_string(connection_limits_.max_connections) +
                    " connections already (socket.max_connections)");
      return;
  }
  unidentified_.insert(session->id());
  unidentified_order_.push_back(session->id());
}

void Dispatcher::prune_unidentified_order() {
  // Entries of connections since admitted or gone; the front is an unidentified one (at most
  // hello_timeout old), so what is kept behind it stays few.
  while (!unidentified_order_.empty() && !unidentified_.count(unidentified_order_.front())) {
    unidentified_order_.pop_front();
  }
}

void Dispatcher::on_failing(HandlerSession& session, const std::string& why) {
  const std::string who = session.handler() ? "handler \"" + session.handler_name() + "\"" : "a peer";
  warn_limited(who + " disconnected: " + why, "{} ({}) disconnected: {}. What it had unconfirmed will be redelivered.",
               who, session.peer(), why);
}

bool Dispatcher::busy(const HandlerSession& session) const { return core_.in_flight(session.id()) > 0; }

std::optional<std::string> Dispatcher::on_hello(HandlerSession& session, const proto::Command& hello) {
  JETFAN_ON_IO_THREAD(thread_);
  const Admission admission = admit(settings_.admission, Hello{hello.handler, hello.version}, session.credentials(),
                                    instances_, state_ == State::kServing, proto::kVersion);
  if (!admission.handler) {
    spdlog::warn("refused HELLO from {}: {}", session.peer(), admission.detail);
    return admission.refusal;
  }
  const std::size_t index = *admission.handler;
  const auto& handler = config_.handlers[index];
  session.admit(index, handler.name);
  unidentified_.erase(session.id());
  prune_unidentified_order();
  ++instances_[index];
  admitted_unix_ms_[session.id()] = wall_now_ms();
  session.send_ready(static_cast<std::uint32_t>(handler.max_inflight), handler.patterns);
  session.flush();
  spdlog::info("handler {} connected", describe(session));
  core_.connect(session.id(), index, Clock::now());
  after_input();
  return std::nullopt;
}

void Dispatcher::on_command(HandlerSession& session, const proto::Command& command) {
  JETFAN_ON_IO_THREAD(thread_);
  const TimePoint now = Clock::now();
  bool known = true;
  switch (command.verb) {
    case proto::Verb::kAck:
      known = core_.ack(session.id(), command.id, now);
      break;
    case proto::Verb::kNak: {
      std::optional<Duration> delay;
      if (command.delay_ms) delay = Duration(static_cast<Duration::rep>(std::min(*command.delay_ms, kMaxNakDelayMs)));
      known = core_.nak(session.id(), command.id, delay, now);
      break;
    }
    case proto::Verb::kTerm:
      known = core_.term(session.id(), command.id, now);
      if (known) {
        spdlog::warn("handler {} terminated delivery {} as poison: {}", describe(session), command.id,
                     command.reason.empty() ? "(no reason given)" : command.reason);
      }
      break;
    case proto::Verb::kWip:
      known = core_.wip(session.id(), command.id, now);
      break;
    case proto::Verb::kPing:
      session.send_pong();
      session.flush();
      return;
    case proto::Verb::kPong:
    case proto::Verb::kHello:
      return;
  }
  if (!known) {
    spdlog::debug("handler {}: {} {} names no delivery in flight on this connection (late, after a timeout?); ignored",
                  describe(session), proto::to_string(command.verb), command.id);
  }
}

void Dispatcher::on_input_consumed(HandlerSession&) {
  JETFAN_ON_IO_THREAD(thread_);
  // Once per read, not per command: the +ACKs of a burst of confirmations go to cnats together,
  // and pulls, writes and the wake-up timer are settled once for all of them.
  after_input();
}

void Dispatcher::on_closed(HandlerSession& session) {
  JETFAN_ON_IO_THREAD(thread_);
  const auto entry = sessions_.find(session.id());
  if (entry == sessions_.end()) return;
  // The session stays in the table until its failed deliveries have been reported by name.
  const std::shared_ptr<HandlerSession> alive = entry->second;
  unidentified_.erase(session.id());
  prune_unidentified_order();
  if (session.handler() && state_ != State::kDone) {
    --instances_[*session.handler()];
    spdlog::info("handler {} disconnected; what it had unconfirmed will be redelivered", describe(session));
    core_.disconnect(session.id(), Clock::now());
    after_input();
  }
  admitted_unix_ms_.erase(session.id());
  sessions_.erase(session.id());
}

void Dispatcher::begin_drain() {
  JETFAN_ON_IO_THREAD(thread_);
  if (state_ != State::kServing) return;
  state_ = State::kDraining;
  notifier_.stopping();
  drain_deadline_ = Clock::now() + config_.delivery.drain_timeout;
  notifier_.extend_timeout(config_.delivery.drain_timeout + kFinalFlush + kStopMargin);
  ledger_.stop();
  listener_.stop();
  const TimePoint now = Clock::now();
  const Duration handback = ledger_.handback_delay(now);
  const std::size_t in_flight = core_.in_flight();
  spdlog::info(
      "draining: {} deliveries in flight may finish within {}ms; {} other held message(s) handed back now, "
      "redelivered in {}ms (once jetfan's pull requests at the server have expired)",
      in_flight, config_.delivery.drain_timeout.count(), core_.held() - std::min(core_.held(), in_flight),
      handback.count());
  core_.begin_drain(now, handback);
  drain_timer_.expires_after(config_.delivery.drain_timeout);
  drain_timer_.async_wait([this](const boost::system::error_code& error) {
    if (error || state_ != State::kDraining) return;
    spdlog::warn("drain_timeout reached with {} deliveries still in flight; handing them back", core_.in_flight());
    finish();
  });
  after_input();
}

void Dispatcher::finish() {
  JETFAN_ON_IO_THREAD(thread_);
  if (state_ == State::kDone) return;
  if (state_ == State::kServing) begin_drain();
  if (state_ == State::kDone) return;  // the drain had nothing in flight and finished at once
  state_ = State::kDone;
  core_.abandon_all(Clock::now());
  apply_effects();
  const auto& c = core_.counters();
  spdlog::info(
      "stopped: {} messages arrived, {} acked, {} nak'd, {} terminated, {} with no recipient, {} unroutable; "
      "{} deliveries to handlers",
      c.arrived, c.acked, c.nakked, c.terminated, c.no_recipient, c.unroutable, c.deliveries);
  reader_.close(kFinalFlush);
  auto sessions = std::move(sessions_);
  for (auto& [id, session] : sessions) session->close();
  wakeup_.cancel();
  housekeeping_.cancel();
  drain_timer_.cancel();
  probe_timer_.cancel();
  listener_.stop();
  io_.stop();
}

}  // namespace jetfan
