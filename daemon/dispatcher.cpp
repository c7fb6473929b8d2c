#include "dispatcher.hpp"

#include <algorithm>
#include <bit>

#include <spdlog/spdlog.h>

#include "descriptors.hpp"
#include "jetstream_subject.hpp"
#include "nats_header.hpp"
#include "protocol.hpp"
#include "redriven_message.hpp"

namespace jetfan {

namespace {

// How often pull liveness is checked and pulls topped up without another reason to: well inside
// the heartbeat, rarely enough to cost nothing.
constexpr Duration kHousekeeping{500};
// A warning that repeats (a handler timing out on every message, say) is logged this many times per
// window, then counted; the count is logged when the window ends.
constexpr std::size_t kWarningBurst = 5;
constexpr Duration kWarningWindow{10000};
// housekeeping() runs every kHousekeeping while the io thread runs; a longer gap between two turns
// that look (housekeeping, the core's wakeup) means jetfan was stopped or starved meanwhile.
constexpr Duration kNotRunning{2 * kHousekeeping};
// At the end, what is buffered for the server (the last acks and hand-backs) gets this long to go.
constexpr Duration kFinalFlush{2000};
// Asked of systemd beyond what the drain and the final flush may take: closing sessions, exiting.
constexpr Duration kStopMargin{5000};
// A handler's own NAK delay is capped: the server takes nanoseconds in a signed 64-bit number.
constexpr std::uint64_t kMaxNakDelayMs = 1ULL << 40;

}  // namespace

Router make_router(const Config& config) {
  std::vector<RoutedHandler> handlers;
  for (const auto& handler : config.handlers) handlers.push_back(RoutedHandler{handler.patterns, handler.order_by});
  return Router(handlers, proto::find_header);
}

Dispatcher::Dispatcher(const Config& config, ServeSettings settings, Upstream& upstream, Timekeeper& time,
                       SystemdNotifier& notifier, MessageBytesArena& arena, DispatcherHooks hooks)
    : config_(config),
      upstream_(upstream),
      time_(time),
      notifier_(notifier),
      hooks_(std::move(hooks)),
      settings_(std::move(settings)),
      core_(settings_.core),
      pulls_(settings_.pull, upstream, time, reader_health_),
      router_(make_router(config)),
      table_(config.handlers.size(), ConnectionLimits{config.socket.max_connections, config.socket.max_unidentified}),
      arena_(arena),
      warnings_(kWarningBurst, kWarningWindow),
      log_(config, warnings_),
      full_(config, settings_.pull, warnings_) {
  if (config_.ledger) ledger_.emplace(*config_.ledger, config_.consumer.durable, upstream_, warnings_);
  if (settings_.pin) {
    pinned_.emplace(config_, *settings_.pin, upstream_, static_cast<PinHost&>(*this));
    pulls_.attach(*pinned_);
  }
  // Out of descriptors, jetfan could not even reconnect to NATS: connections stop short of it.
  const DescriptorPlan plan = plan_descriptors(raise_descriptor_limit(), open_descriptors(),
                                               config.metrics ? config.metrics->max_connections : 0,
                                               defaults::kControlMaxSessions, defaults::kReservedDescriptors);
  log_.descriptor_plan(plan);
  const std::size_t budget = plan.handlers;
  if (budget < table_.limits().max_connections) {
    log_.connections_limited(table_.limits().max_connections, budget);
    table_.limit_connections(budget);
  }
  log_.unrestricted_handlers();
}

Dispatcher::~Dispatcher() {
  upstream_.listen(nullptr);
  time_.on_fired(nullptr);
  for (std::size_t a = 0; a < kAlarmCount; ++a) time_.cancel(static_cast<Alarm>(a));
  // Sessions refer to this object as their owner: close them before it goes.
  table_.close_all();
}

void Dispatcher::start() {
  JETFAN_ON_IO_THREAD(thread_);
  time_.on_fired([this](Alarm alarm) { on_alarm(alarm); });
  upstream_.listen(this);
  // A pinned_client reader serves only once the server pins it: until then it stands by.
  if (pinned_) stand_by(time_.now(), true);  // nothing was pulled yet
  top_up_pulls();
  housekeeping();
}

std::optional<ConnectionId> Dispatcher::accept(HandlerSession::Socket socket) {
  JETFAN_ON_IO_THREAD(thread_);
  if (state_ != State::kServing) return std::nullopt;
  const ConnectionId id = next_connection_++;
  table_.add(
      std::make_shared<HandlerSession>(std::move(socket), id, static_cast<SessionOwner&>(*this), config_.socket));
  return id;
}

TimePoint Dispatcher::batch_now() {
  if (!batch_now_) {
    batch_now_ = time_.now();
    wall_now_ns_ = time_.wall_now_ns();
  }
  return *batch_now_;
}

void Dispatcher::on_disconnected(std::string_view why) {
  JETFAN_ON_IO_THREAD(thread_);
  reader_health_.disconnected(batch_now(), why);
  unreadable_.disconnected(why == kProtocolError);
}

void Dispatcher::on_reconnected() {
  JETFAN_ON_IO_THREAD(thread_);
  const TimePoint now = batch_now();
  reader_health_.reconnected();
  unreadable_.reconnected();
  // A message that broke the connection is looked for as soon as the server says what it delivered.
  if (unreadable_.wants_consumer_info()) watch_.ask(0);
  // The server forgets pull requests when it restarts, and cnats does not re-send them.
  status_.reconnected();
  // Answers to dead letters published before are lost with the connection: try them again.
  dead_letters_.connection_lost(now);
  pulls_.on_reconnected(now);
}

void Dispatcher::on_probe_answer(bool answered) { pulls_.on_probe_answer(answered, batch_now()); }

void Dispatcher::on_batch_end() {
  JETFAN_ON_IO_THREAD(thread_);
  const TimePoint now = batch_now();
  // Full now, a backlog set to go back goes at once, before it takes the room of new messages.
  if (state_ == State::kServing && pulls_.ledger().full(core_.held_for_room(), arena_.bytes)) {
    full_.act(core_, true, arena_.bytes, now);
  }
  batch_now_.reset();
  after_input();
}

void Dispatcher::on_pull_status(const PullStatus& status) {
  const TimePoint now = batch_now();
  const PullDriver::StatusHeard heard = pulls_.on_status(status, now);
  if (heard.request_sent) core_.heard(*heard.request_sent, now);
  if (heard.consumer_deleted) {
    log_.consumer_deleted();
    core_.forget_history();
  }
}

void Dispatcher::on_message(InboundMessage&& message) {
  const TimePoint now = batch_now();
  const MessageHandle handle = next_handle_++;
  unreadable_.arrived(message.stream_seq, message.consumer_seq);
  if (message.consumer_seq != 0) {
    ++own_.arrivals;
    own_.highest_consumer_seq = std::max(own_.highest_consumer_seq, message.consumer_seq);
  } else {
    reader_health_.excuse();  // a delivery of unknown number: the count cannot be judged
  }
  // A pinned_client group: the first delivery after the server pins jetfan carries the pin id.
  if (pinned_) pinned_->on_message(proto::find_header(message.bytes->headers(), "Nats-Pin-Id").value_or(""), now);
  if (message.published_ns != 0) {
    status_.arrived_aged(std::chrono::nanoseconds(wall_now_ns_ - static_cast<std::int64_t>(message.published_ns)));
  }
  if (!message.routable) {
    log_.unroutable(*message.bytes, message.stream_seq);
    if (observer_) observe_unroutable(message);
    const Arrival arrival{handle, message.stream_seq, message.deliveries, 0, true};
    stored_.add(handle, HeldMessage{std::move(message.bytes), {}, message.stream_seq, 0});
    core_.arrive(arrival, now);
    if (tap_) tap_->arrived(arrival);
    pulls_.on_message(now, 0);
    return;
  }
  last_arrived_seq_ = message.stream_seq;
  const std::uint64_t size = message.bytes->size();
  const HeldMessage& stored = stored_.add(handle, HeldMessage{std::move(message.bytes), message.key, message.stream_seq,
                                                              message.deliveries, message.published_ns});
  Arrival arrival{handle, message.stream_seq, message.deliveries, 0, false};
  const Route route = router_.route(stored.key, stored.message->headers(), arrival.order);
  arrival.recipients = route.recipients;
  if (observer_) observe(stored, route.recipients);
  if (route.without_order_key != 0) {
    note_without_order_key(route.without_order_key, message.stream_seq, *stored.message, stored.key);
  }
  arrival.consumer_seq = message.consumer_seq;
  arrival.published_ns = message.published_ns;
  arrival.wall_ns = wall_now_ns_;
  if (tracing_) tracing_->arrived(handle, stored, static_cast<std::uint64_t>(wall_now_ns_), now);
  core_.arrive(arrival, now);
  if (tap_) tap_->arrived(arrival);
  pulls_.on_message(now, size);
}

void Dispatcher::note_without_order_key(HandlerMask handlers, std::uint64_t stream_seq, const MessageBytes& bytes,
                                        std::string_view key) {
  for (std::size_t h = 0; h < config_.handlers.size(); ++h) {
    if (!(handlers & (HandlerMask{1} << h))) continue;
    status_.without_order_key(h);
    log_.without_order_key(h, stream_seq, bytes, key, time_.now());
  }
}

void Dispatcher::expect_outstanding(const ConsumerFacts& facts,
                                    const std::optional<std::vector<jetstream::StoredMessage>>& read) {
  JETFAN_ON_IO_THREAD(thread_);
  const TimePoint now = time_.now();
  Outstanding outstanding;
  outstanding.floor = facts.ack_floor;
  outstanding.delivered = facts.delivered;
  outstanding.pending = facts.ack_pending;
  outstanding.unread = !read.has_value();
  // A message handed back by an earlier reader comes back after its delay at the latest, one it
  // left in flight within an AckWait: as long as the core waits for one handed back itself.
  const Duration hold = order_away_hold(settings_.core.nak_delay_max, settings_.core.keepalive);
  outstanding.until = now + hold;
  outstanding.wall_ns = time_.wall_now_ns();
  // From then on the server can show it sent them again (docs/dispatch-rules.md R28).
  const Duration proof_after = settings_.core.nak_delay_max + gap_hold(settings_.core.keepalive);
  if (read) {
    for (const jetstream::StoredMessage& message : *read) {
      const auto key = jetstream::key_of(message.subject, config_.key.strip_prefix);
      if (!key) continue;
      Outstanding::Entry entry{message.seq, {}};
      router_.route(*key, message.headers, entry.order);
      if (!entry.order.empty()) outstanding.messages.push_back(std::move(entry));
    }
  }
  core_.expect_outstanding(outstanding, now);
  apply_effects();
  arm_wakeup();
  holds_.restart_holds(core_, facts, outstanding, proof_after, hold);
}

void Dispatcher::on_alarm(Alarm alarm) {
  const TimePoint now = time_.now();
  switch (alarm) {
    case Alarm::kWakeup:
      armed_for_.reset();
      notice_stall(now);  // before tick(): a stall must not fail what jetfan could not read
      core_.tick(now);
      after_input();
      return;
    case Alarm::kHousekeeping:
      housekeeping();
      return;
    case Alarm::kDrain:
      if (state_ != State::kDraining) return;
      DispatchLog::drain_timed_out(core_.in_flight());
      finish();
      return;
    case Alarm::kProbe:
      pulls_.probe(now);
      after_input();
      return;
  }
}

void Dispatcher::after_input() {
  holds_.note(core_);
  apply_effects();
  if (ledger_) ledger_->write_due(time_.now(), [this](std::uint64_t seq) { return confirmed_names(seq); });
  if (state_ == State::kServing) top_up_pulls();
  if (state_ == State::kDraining && core_.in_flight() == 0) {
    finish();
    return;
  }
  arm_wakeup();
}

void Dispatcher::top_up_pulls() { pulls_.top_up(core_.held_for_room(), arena_.bytes); }

void Dispatcher::take_over(TimePoint now) {
  if (state_ != State::kServing) {
    // Pinned while stopping: the pin is given straight back, or a standby would wait out its timeout.
    pinned_->release();
    return;
  }
  // What the former owner left unacked comes to jetfan after AckWait: order waits for it (R26-R31).
  if (hooks_.take_over) {
    hooks_.take_over();
  } else {
    expect_outstanding(ConsumerFacts{}, std::nullopt);
  }
  core_.resume(now);
  if (tap_) tap_->stood_by(now, false, Duration(0));
  apply_effects();
}

void Dispatcher::stand_by(TimePoint now, bool refused) {
  // Unless the server refused jetfan's id, its requests may still carry a valid one: what goes back
  // must outlast them, or it would come straight back to jetfan, a delivery spent each time.
  const Duration handback = refused ? Duration(0) : pulls_.ledger().handback_delay(now);
  core_.stand_by(now, handback);
  if (tap_) tap_->stood_by(now, true, handback);
  apply_effects();
}

std::optional<Dispatcher::StepDown> Dispatcher::step_down() {
  JETFAN_ON_IO_THREAD(thread_);
  if (!pinned_) return std::nullopt;
  auto done = pinned_->step_down(time_.now());
  after_input();
  if (done) return StepDown{true, std::move(*done)};
  return StepDown{false,
                  "jetfan is standing by: the pin is another's, and releasing it would only move it; run step-down "
                  "where jetfan status says \"pin:     active\""};
}

void Dispatcher::apply_effects() {
  auto& effects = core_.effects();
  if (tap_ && !effects.empty()) tap_->effects(effects, time_.now());
  // Effects are told to tracing only while something traced is open; only then are clocks read.
  DispatchTracing* const tracing = tracing_ && !effects.empty() && !tracing_->idle() ? tracing_.get() : nullptr;
  const TimePoint traced_at = tracing ? time_.now() : TimePoint{};
  const std::uint64_t traced_wall = tracing ? static_cast<std::uint64_t>(time_.wall_now_ns()) : 0;
  std::size_t kept_alive = 0;
  for (const Effect& effect : effects) {
    auto stored = stored_.find(effect.message);
    if (stored == stored_.end()) continue;
    const MessageBytes& message = *stored->second.message;
    switch (effect.kind) {
      case Effect::Kind::kDeliver: {
        HandlerSession* session = table_.find(effect.connection);
        if (session == nullptr) break;
        const auto& s = stored->second;
        std::optional<std::string> traceparent;
        if (tracing && session->handler()) {
          traceparent = tracing->effect(effect, *session->handler(), {}, traced_wall, traced_at);
        }
        // The handler's own count; the server's goes beside it in version 2.
        session->send_msg(effect.delivery, s.key, s.stream_seq, effect.deliveries, s.deliveries, s.published_ns,
                          s.message, traceparent ? std::string_view(*traceparent) : std::string_view());
        if (dirty_.empty() || dirty_.back().get() != session) dirty_.push_back(session->shared_from_this());
        break;
      }
      case Effect::Kind::kAck:
        upstream_.ack(message);
        if (ledger_) ledger_->settled(stored->second.stream_seq, time_.now());
        break;
      case Effect::Kind::kNak:
        upstream_.nak(message, effect.delay);
        break;
      case Effect::Kind::kTerm:
        upstream_.term(message);
        if (ledger_) ledger_->settled(stored->second.stream_seq, time_.now());
        break;
      case Effect::Kind::kWip:
        upstream_.wip(message);
        ++kept_alive;
        break;
      case Effect::Kind::kRelease:
        stored_.erase(stored);
        break;
      case Effect::Kind::kFailed: {
        const HandlerSession* session = table_.find(effect.connection);
        const bool ordered = session && session->handler() && router_.ordered(*session->handler());
        std::string_view reason;
        if (effect.cause == FailCause::kNak && next_nak_reason_ < nak_reasons_.size()) {
          // The NAKs' kFailed come in the order the NAKs were read: the next one with words is it.
          const NakReason& said = nak_reasons_[next_nak_reason_];
          if (said.connection == effect.connection && said.delivery == effect.delivery) {
            reason = said.reason;
            ++next_nak_reason_;
          }
        }
        // An ACK of it no longer counts: what its tied publishes came to need not wait for one.
        publisher_.settled_otherwise(effect.connection, effect.delivery);
        log_.failed(effect, stored->second, session, ordered, reason, time_.now());
        if (tracing) tracing->effect(effect, 0, reason, traced_wall, traced_at);
        break;
      }
      case Effect::Kind::kDeadLetter:
        dead_letters_.publish(effect, stored->second, time_.now());
        break;
      case Effect::Kind::kGaveUp:
        log_.gave_up(effect, stored->second, time_.now());
        break;
      case Effect::Kind::kRedriveSettled:
      case Effect::Kind::kRedriveDropped:
        jobs_.redrive_ended(effect);
        break;
      case Effect::Kind::kOrderReleased:
        break;  // for tracing alone, below
      case Effect::Kind::kTrim: {
        stored_.trim(stored->second, arena_);
        break;
      }
    }
    // Every other effect tells tracing only what it says itself (the delivery and a failure's
    // reason are told above). `stored` may be gone: tracing needs only the handle.
    if (tracing && effect.kind != Effect::Kind::kDeliver && effect.kind != Effect::Kind::kFailed) {
      tracing->effect(effect, 0, {}, traced_wall, traced_at);
    }
  }
  effects.clear();
  nak_reasons_.clear();
  next_nak_reason_ = 0;
  dead_letters_.fail_unsent(time_.now());
  if (kept_alive > 0) DispatchLog::kept_alive(kept_alive);
  // A flush can close a session (max_output_buffer), and the close applies effects again, which
  // may add to and flush dirty_: walk a list of our own.
  std::vector<std::shared_ptr<HandlerSession>> dirty;
  dirty.swap(dirty_);
  for (auto& session : dirty) session->flush();
  // The list's storage goes back for the next call, unless a re-entered call has made a new one.
  dirty.clear();
  if (dirty_.empty()) dirty_.swap(dirty);
}

void Dispatcher::arm_wakeup() {
  auto wake = core_.next_wakeup();
  if (ledger_) {
    if (const auto due = ledger_->next_due(); due && (!wake || *due < *wake)) wake = due;
  }
  if (!wake || (armed_for_ && *armed_for_ <= *wake)) return;
  armed_for_ = wake;
  time_.set(Alarm::kWakeup, *wake);
}

std::string Dispatcher::status_line() const {
  const std::size_t connected = table_.connected();
  const std::size_t missing = table_.without_instance();
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
    reader_health_.excuse();  // what the server delivered meanwhile could not be read
  }
  if (!last_turn_ || *last_turn_ < now) last_turn_ = now;
}

void Dispatcher::housekeeping() {
  const TimePoint now = time_.now();
  notice_stall(now);
  if (dead_letters_.fail_overdue(now)) arm_wakeup();
  for (const PublishReply& reply : publisher_.time_out(now)) send_publish_reply(reply);
  release_acks(now);
  jobs_.time_out(now);
  unreadable_.time_out(now);
  if (ledger_) {
    ledger_->time_out(now);
    ledger_->write_due(now, [this](std::uint64_t seq) { return confirmed_names(seq); });
  }
  notifier_.status(status_line());
  if (state_ == State::kDraining) {
    const Duration left = std::max(Duration(0), std::chrono::ceil<Duration>(drain_deadline_ - now));
    notifier_.extend_timeout(left + kFinalFlush + kStopMargin);
  }
  warnings_.report_suppressed(now);
  pulls_.check_liveness(now);
  if (tracing_) tracing_->housekeeping(now);
  if (state_ == State::kServing) {
    watch_.tick(now);
    if (pinned_) pinned_->tick(now);
    full_.warn_blocked_keys(core_, now);
    full_.act(core_, pulls_.ledger().full(core_.held_for_room(), arena_.bytes), arena_.bytes, now);
    apply_effects();
    top_up_pulls();
  }
  if (state_ == State::kDone) return;
  time_.set(Alarm::kHousekeeping, now + kHousekeeping);
}

std::optional<std::string> Dispatcher::start_dead_letter_job(const DeadLetterJob& job, DeadLetterJobOutput out) {
  JETFAN_ON_IO_THREAD(thread_);
  return jobs_.start(job, std::move(out));
}

void Dispatcher::on_published(std::uint64_t id, const PublishResult& result) {
  JETFAN_ON_IO_THREAD(thread_);
  if (LedgerWriter::owns(id)) {
    if (ledger_) ledger_->on_published(id, result, batch_now());
    return;
  }
  if (UnreadableMessages::owns(id)) {
    unreadable_.on_published(id, result);
    return;
  }
  if (HandlerPublisher::owns(id)) {
    if (const auto reply = publisher_.on_published(id, result, batch_now())) send_publish_reply(*reply);
    release_acks(batch_now());  // applied with the rest of the batch (on_batch_end)
    return;
  }
  dead_letters_.on_published(id, result, batch_now());
}

void Dispatcher::on_api_reply(std::uint64_t id, const ApiReply& reply) {
  JETFAN_ON_IO_THREAD(thread_);
  if (pinned_ && PinnedReader::owns_request(id)) {
    pinned_->on_api_reply(id, reply, batch_now());
    return;
  }
  if (ConsumerWatch::owns(id)) {
    const TimePoint now = batch_now();
    const auto heard = watch_.on_reply(id, reply, now);
    if (heard.info) {
      // The server counted its waiting requests at some moment since the answer before; one it
      // counted may have been filled, and retired here, before this answer came (seen at 20,000
      // msg/s): the most jetfan had open since then is what a lone jetfan's count can reach.
      own_.outstanding_pulls = pulls_.most_open();
      reader_health_.heard(now, *heard.info, own_);
      pulls_.answered();
      unreadable_.heard(*heard.info, now);
      if (reader_health_.exit_code() && state_ == State::kServing) begin_drain();
    } else if (heard.error) {
      reader_health_.heard(*heard.error);
    }
    return;
  }
  if (UnreadableMessages::owns(id)) {
    unreadable_.on_api_reply(id, reply, batch_now());
    return;
  }
  jobs_.on_api_reply(id, reply);
}

void Dispatcher::settle_unreadable(MessageBytesPtr bytes, std::uint64_t stream_seq) {
  // As a message no handler can be given: the core terminates it, with AckPolicy all once the floor
  // reaches it. Its delivery number is not given: the delivery gap check is for arrivals.
  const MessageHandle handle = next_handle_++;
  const Arrival arrival{handle, stream_seq, 1, 0, true};
  stored_.add(handle, HeldMessage{std::move(bytes), {}, stream_seq, 1, 0});
  core_.arrive(arrival, batch_now());
  if (tap_) tap_->arrived(arrival);
}

std::optional<std::string> Dispatcher::examine_unreadable(std::uint64_t seq, UnreadableMessages::Done done) {
  JETFAN_ON_IO_THREAD(thread_);
  if (state_ != State::kServing) return "not serving";
  if (settings_.core.ack_policy == AckPolicy::kAll) {
    return "the consumer's AckPolicy is all: a +TERM there settles every delivery up to its consumer sequence, "
           "which only a break of the connection tells; jetfan finds such a message when it breaks the connection";
  }
  return unreadable_.examine(seq, std::move(done), time_.now());
}

std::vector<std::size_t> Dispatcher::matching_handlers(std::string_view key, std::string_view headers) {
  std::vector<OrderKey> order;
  const HandlerMask recipients = router_.route(key, headers, order).recipients;
  std::vector<std::size_t> handlers;
  for (std::size_t h = 0; h < config_.handlers.size(); ++h) {
    if (recipients & (HandlerMask{1} << h)) handlers.push_back(h);
  }
  return handlers;
}

std::unordered_set<std::uint64_t> Dispatcher::held_sequences() const {
  std::unordered_set<std::uint64_t> held;
  stored_.each([&](const HeldMessage& message) { held.insert(message.stream_seq); });
  return held;
}

bool Dispatcher::api_request(std::uint64_t id, const std::string& subject, const std::string& body) {
  return upstream_.api_request(id, subject, body);
}

bool Dispatcher::redrive(std::size_t handler, const jetstream::StoredMessage& letter) {
  RedrivenMessage made = redriven_message(letter, arena_);
  const std::string_view subject = made.bytes->subject();
  const std::string_view key = jetstream::key_of(subject, config_.key.strip_prefix).value_or(subject);
  Redrive redrive{next_handle_++, letter.seq, handler, std::nullopt};
  if (const auto found = router_.order_key(handler, key, made.bytes->headers()))
    redrive.order_key = std::string(*found);
  const HeldMessage& held =
      stored_.add(redrive.message, HeldMessage{std::move(made.bytes), key, made.original_seq, 1, 0});
  if (!core_.redrive(redrive, time_.now())) {
    stored_.erase(redrive.message);
    return false;
  }
  // on_batch_end applies what the core decided: its course is traced from here.
  if (tracing_) tracing_->arrived(redrive.message, held, static_cast<std::uint64_t>(time_.wall_now_ns()), time_.now());
  return true;
}

void Dispatcher::on_failing(HandlerSession& session, const std::string& why) {
  log_.failing(session, why, time_.now());
}

bool Dispatcher::busy(const HandlerSession& session) const {
  return core_.in_flight(session.id()) > 0 || publisher_.waiting(session.id()) > 0;
}

std::optional<std::string> Dispatcher::on_hello(HandlerSession& session, const proto::Command& hello) {
  JETFAN_ON_IO_THREAD(thread_);
  const Admission admission = admit(settings_.admission, Hello{hello.handler, hello.version}, session.credentials(),
                                    table_.instances(), state_ == State::kServing, proto::kLatestVersion);
  if (!admission.handler) {
    log_.refused(session, hello.handler, admission.detail);
    return admission.refusal;
  }
  const std::size_t index = *admission.handler;
  const auto& handler = config_.handlers[index];
  // The server's max_payload as the connection knows it now: a body over it could never be stored.
  const std::size_t max_payload = upstream_.max_payload();
  session.admit(index, handler.name, admission.version,
                max_payload > 0 ? max_payload : HandlerSession::kDefaultMaxPublishBody);
  table_.admitted(session, index, wall_now_ms());
  session.send_ready(static_cast<std::uint32_t>(handler.max_inflight), handler.patterns);
  session.flush();
  log_.connected(session);
  core_.connect(session.id(), index, time_.now());
  if (tap_) tap_->connected(session.id(), index);
  after_input();
  return std::nullopt;
}

void Dispatcher::on_command(HandlerSession& session, const proto::Command& command) {
  JETFAN_ON_IO_THREAD(thread_);
  const TimePoint now = time_.now();
  switch (command.verb) {
    case proto::Verb::kAck:
      // An ACK whose tied publishes still wait counts once they are answered (release_acks).
      if (publisher_.hold_ack(session.id(), command.id)) {
        release_acks(now);
        return;
      }
      break;
    case proto::Verb::kPing:
      session.send_pong();
      if (tap_) tap_->ponged(session.id());
      session.flush();
      return;
    case proto::Verb::kPub:
      on_publish(session, command);
      return;
    case proto::Verb::kPong:
    case proto::Verb::kHello:
      return;
    case proto::Verb::kNak:
    case proto::Verb::kTerm:
    case proto::Verb::kWip:
      break;
  }
  confirm(session, command, now);
}

void Dispatcher::confirm(HandlerSession& session, const proto::Command& command, TimePoint now) {
  bool known = true;
  switch (command.verb) {
    case proto::Verb::kAck: {
      const auto seq = ledger_ ? core_.seq_in_flight(session.id(), command.id) : std::nullopt;
      known = core_.ack(session.id(), command.id, now);
      if (known && ledger_) note_confirmed(session, seq, now);
      break;
    }
    case proto::Verb::kNak: {
      if (const auto seq = core_.seq_in_flight(session.id(), command.id); seq && session.handler()) {
        dead_letters_.note_reason(*session.handler(), *seq, false, command.reason);
        if (!command.reason.empty()) {
          log_.nakked(session, command.id, command.reason);
          nak_reasons_.push_back(NakReason{session.id(), command.id, command.reason});
        }
      }
      std::optional<Duration> delay;
      if (command.delay_ms) delay = Duration(static_cast<Duration::rep>(std::min(*command.delay_ms, kMaxNakDelayMs)));
      publisher_.settled_otherwise(session.id(), command.id);
      known = core_.nak(session.id(), command.id, delay, now);
      break;
    }
    case proto::Verb::kTerm: {
      const auto seq = core_.seq_in_flight(session.id(), command.id);
      if (seq && session.handler()) dead_letters_.note_reason(*session.handler(), *seq, true, command.reason);
      publisher_.settled_otherwise(session.id(), command.id);
      known = core_.term(session.id(), command.id, now);
      if (known) {
        log_.terminated(session, command.id, command.reason);
        if (ledger_) note_confirmed(session, seq, now);
      }
      break;
    }
    case proto::Verb::kWip:
      known = core_.wip(session.id(), command.id, now);
      break;
    default:
      return;
  }
  if (tap_) tap_->answered(session.id(), command, known);
  if (!known) {
    log_.unknown_answer(session, command.verb, command.id);
  } else if (tracing_ && !tracing_->idle()) {
    tracing_->answered(session.id(), command, static_cast<std::uint64_t>(time_.wall_now_ns()), now);
  }
}

void Dispatcher::note_confirmed(const HandlerSession& session, std::optional<std::uint64_t> seq, TimePoint now) {
  if (!seq || !session.handler()) return;
  // Settled by this answer (its last owner), the message is gone from the core; only one still owed
  // elsewhere, or handed back for another, can come again.
  const HandlerMask confirmed = core_.confirmed_before(*seq);
  if ((confirmed & (HandlerMask{1} << *session.handler())) == 0) return;
  ledger_->confirmed(*seq, config_.handlers[*session.handler()].name, std::popcount(confirmed) == 1, now);
}

std::vector<std::string_view> Dispatcher::confirmed_names(std::uint64_t seq) const {
  std::vector<std::string_view> names;
  const HandlerMask confirmed = core_.confirmed_before(seq);
  for (std::size_t h = 0; h < config_.handlers.size(); ++h) {
    if (confirmed & (HandlerMask{1} << h)) names.emplace_back(config_.handlers[h].name);
  }
  return names;
}

void Dispatcher::load_ledger(const std::vector<LedgerRecord>& records, std::uint64_t ack_floor) {
  JETFAN_ON_IO_THREAD(thread_);
  ledger_->load(records, ack_floor);
  std::uint64_t remembered = 0;
  for (const LedgerRecord& record : records) {
    if (record.seq <= ack_floor) continue;
    HandlerMask confirmed = 0;
    for (const std::string& name : record.handlers) {
      for (std::size_t h = 0; h < config_.handlers.size(); ++h) {
        if (config_.handlers[h].name == name) confirmed |= HandlerMask{1} << h;
      }
    }
    if (confirmed == 0) continue;  // only handlers no longer configured: kept for the record alone
    core_.remember_confirmed(record.seq, confirmed);
    ++remembered;
  }
  log_info("ledger.loaded",
           {{"bucket", config_.ledger->bucket}, {"records", records.size()}, {"remembered", remembered}},
           "ledger: read {} record(s) from bucket \"{}\"; {} message(s) above the ack floor will go only to the "
           "handlers that had not confirmed them",
           records.size(), config_.ledger->bucket, remembered);
}

void Dispatcher::on_publish(HandlerSession& session, const proto::Command& pub) {
  const HandlerSettings& handler = config_.handlers[*session.handler()];
  std::optional<std::uint64_t> tied_seq;
  std::string msg_id;
  if (pub.tied_to) {
    tied_seq = core_.seq_in_flight(session.id(), *pub.tied_to);
    if (tied_seq) {
      msg_id = tied_msg_id(config_.consumer.stream, config_.consumer.durable, *tied_seq, handler.name, pub.tie_index);
    }
  }
  const auto reply =
      publisher_.publish(session.id(), handler.name, handler.publish, pub, tied_seq, msg_id, time_.now());
  if (reply) {
    send_publish_reply(*reply);
    return;
  }
  if (handler.publish && publisher_.full(session.id(), *handler.publish)) session.hold_input(true);
}

void Dispatcher::send_publish_reply(const PublishReply& reply) {
  HandlerSession* session = table_.find(reply.connection);
  if (session == nullptr || session->ending()) return;
  if (reply.stored) {
    session->send_pubok(reply.request, reply.stream, reply.seq, reply.duplicate);
  } else {
    session->send_puberr(reply.request, reply.code, reply.reason);
  }
  if (tap_) tap_->answered_publish(reply.connection, reply.request, reply.stored);
  session->flush();
  if (const auto handler = session->handler()) {
    const auto& settings = config_.handlers[*handler].publish;
    if (!settings || !publisher_.full(reply.connection, *settings)) session->hold_input(false);
  }
}

void Dispatcher::release_acks(TimePoint now) {
  for (ReleasedAck& released : publisher_.released()) {
    HandlerSession* session = table_.find(released.connection);
    if (session == nullptr || session->ending()) continue;
    // A failed tied publish makes the ACK a NAK with jetfan's reason: logged, kept for a dead
    // letter, traced, as the handler's own NAK would be.
    proto::Command command;
    command.verb = released.failed.empty() ? proto::Verb::kAck : proto::Verb::kNak;
    command.id = released.delivery;
    command.reason = std::move(released.failed);
    confirm(*session, command, now);
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
  if (table_.find(session.id()) == nullptr) return;
  // The session stays in the table until its failed deliveries have been reported by name.
  const std::shared_ptr<HandlerSession> alive = session.shared_from_this();
  publisher_.forget(session.id());
  if (session.handler() && state_ != State::kDone) {
    log_.disconnected(session);
    core_.disconnect(session.id(), time_.now());
    if (tap_) tap_->disconnected(session.id());
    after_input();
  }
  table_.closed(session);
}

void Dispatcher::begin_drain() {
  JETFAN_ON_IO_THREAD(thread_);
  if (state_ != State::kServing) return;
  state_ = State::kDraining;
  notifier_.stopping();
  const TimePoint now = time_.now();
  drain_deadline_ = now + config_.delivery.drain_timeout;
  notifier_.extend_timeout(config_.delivery.drain_timeout + kFinalFlush + kStopMargin);
  pulls_.stop();
  if (hooks_.stop_accepting) hooks_.stop_accepting();
  const Duration handback = pulls_.ledger().handback_delay(now);
  const std::size_t in_flight = core_.in_flight();
  const std::size_t handed_back = core_.held() - std::min(core_.held(), in_flight);
  log_.draining(in_flight, handed_back, handback);
  core_.begin_drain(now, handback);
  if (tap_) tap_->began_drain(now, handback);
  time_.set(Alarm::kDrain, drain_deadline_);
  after_input();
}

void Dispatcher::finish() {
  JETFAN_ON_IO_THREAD(thread_);
  if (state_ == State::kDone) return;
  if (state_ == State::kServing) begin_drain();
  if (state_ == State::kDone) return;  // the drain had nothing in flight and finished at once
  state_ = State::kDone;
  core_.abandon_all(time_.now());
  if (tap_) tap_->abandoned_all();
  apply_effects();
  jobs_.end_all("jetfan stopped");
  // What was held is handed back with a delay past jetfan's own requests: a standby may take the pin now.
  if (pinned_) pinned_->release();
  DispatchLog::stopped(core_.counters());
  if (ledger_) ledger_->write_all(time_.now(), [this](std::uint64_t seq) { return confirmed_names(seq); });
  upstream_.close(kFinalFlush);
  table_.close_all();
  for (std::size_t a = 0; a < kAlarmCount; ++a) time_.cancel(static_cast<Alarm>(a));
  if (hooks_.stop_accepting) hooks_.stop_accepting();
  if (hooks_.finished) hooks_.finished();
}

void Dispatcher::observe(const HeldMessage& stored, HandlerMask recipients) {
  if (recipients == 0) observer_->on_no_recipient(stored.key);
  if (!observer_->tailing()) return;
  // A redelivery goes only to the recipients that have not confirmed it: the tail names those.
  observer_->on_tail(TailItem{wall_now_ns_ / 1'000'000, stored.key, stored.stream_seq, stored.deliveries,
                              stored.message->headers(), stored.message->payload(),
                              recipients & ~core_.confirmed_before(stored.stream_seq), false});
}

void Dispatcher::observe_unroutable(const InboundMessage& message) {
  const MessageBytes& bytes = *message.bytes;
  observer_->on_unroutable(bytes.subject());
  if (!observer_->tailing()) return;
  observer_->on_tail(TailItem{
      wall_now_ns_ / 1'000'000, bytes.subject(), message.stream_seq, message.deliveries, {}, bytes.payload(), 0, true});
}

void Dispatcher::fill_status(StatusSnapshot& snapshot, const RateWindow& rates, TimePoint now,
                             std::int64_t now_unix_ms) const {
  status_.fill(snapshot,
               state_ == State::kServing    ? "serving"
               : state_ == State::kDraining ? "draining"
                                            : "stopped",
               rates, now, now_unix_ms);
  watch_.fill(snapshot, time_.now());  // the watch keeps the dispatcher's time
  if (pinned_) pinned_->fill(snapshot);
  reader_health_.fill(snapshot, time_.now());
  unreadable_.fill(snapshot);
  if (tracing_) tracing_->fill(snapshot);
  if (ledger_) snapshot.ledger = ledger_->view(time_.now());
}

void Dispatcher::enable_tracing(SpanSink& sink, const SpanExporter* exporter, std::uint64_t seed) {
  JETFAN_ON_IO_THREAD(thread_);
  tracing_ = std::make_unique<DispatchTracing>(config_, config_.tracing.value().sample_ratio, seed, sink, exporter);
}

std::vector<std::string> Dispatcher::apply_reload(const ReloadPlan& plan, ServeSettings settings) {
  JETFAN_ON_IO_THREAD(thread_);
  std::vector<std::string> lines;
  // Instances of removed handlers are sent ERR and closed; the others move to their new index.
  std::vector<std::size_t> dismissed_per_old;
  const auto dismissed = table_.reindex(plan.old_to_new, config_.handlers.size(), dismissed_per_old);
  status_.reindex(plan.old_to_new, config_.handlers.size());
  router_ = make_router(config_);
  settings_.admission = std::move(settings.admission);
  settings_.core.handlers = settings.core.handlers;
  settings_.core.nak_delay = settings.core.nak_delay;
  settings_.core.nak_delay_max = settings.core.nak_delay_max;
  if (tracing_ && config_.tracing) tracing_->set_sample_ratio(config_.tracing->sample_ratio);
  const ReindexOutcome outcome = core_.reconfigure(
      HandlerReindex{plan.old_to_new, settings.core.handlers, settings.core.nak_delay, settings.core.nak_delay_max},
      time_.now());

  std::size_t removed = 0;
  for (std::size_t old = 0; old < plan.old_to_new.size(); ++old) {
    if (plan.old_to_new[old]) continue;
    const std::string& name = plan.removed.at(removed++);
    lines.push_back("handler \"" + name + "\" removed: " + std::to_string(outcome.released[old]) +
                    " held message(s) it had not confirmed are settled as if it had; " +
                    std::to_string(dismissed_per_old[old]) + " instance(s) sent ERR and disconnected");
  }
  for (const auto& session : dismissed) {
    session->dismiss("handler \"" + session->handler_name() + "\" was removed from jetfan's config by a reload");
  }
  after_input();
  return lines;
}

std::optional<std::string> Dispatcher::set_paused(const std::string& name, bool pause) {
  JETFAN_ON_IO_THREAD(thread_);
  for (std::size_t h = 0; h < config_.handlers.size(); ++h) {
    if (config_.handlers[h].name != name) continue;
    const bool was = core_.paused(h);
    core_.set_paused(h, pause, time_.now());
    settings_.core.handlers[h].paused = pause;
    const std::size_t owed = core_.loads()[h].owed;
    std::string what = "handler \"" + name + "\" " + (was == pause ? "was already " : "") +
                       (pause ? "paused: it gets nothing new; " + std::to_string(owed) + " held message(s) wait for it"
                              : "resumed: " + std::to_string(owed) + " held message(s) it owes go to it now");
    log_info(pause ? "handler.paused" : "handler.resumed", {{"handler", name}, {"held", owed}}, "{}", what);
    after_input();
    return what;
  }
  return std::nullopt;
}

}  // namespace jetfan
