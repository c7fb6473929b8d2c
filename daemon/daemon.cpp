#include "daemon.hpp"

#include <signal.h>
#include <systemd/sd-daemon.h>

#include <spdlog/spdlog.h>

#include "encoder.hpp"
#include "jetstream_subject.hpp"
#include "startup_error.hpp"

namespace jetfan {
namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

namespace {

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

Daemon::Daemon(Config config)
    : config_(std::move(config)),
      signals_(io_, SIGINT, SIGTERM),
      wakeup_(io_),
      housekeeping_(io_),
      drain_timer_(io_) {
  for (std::size_t h = 0; h < config_.handlers.size(); ++h) {
    for (const auto& pattern : config_.handlers[h].patterns) matcher_.add(pattern, h);
  }
  reader_ = std::make_unique<JetStreamReader>(io_, config_);
}

Daemon::~Daemon() {
  // Sessions refer to this object as their owner: close them before it goes.
  auto sessions = std::move(sessions_);
  for (auto& [id, session] : sessions) session->close();
}

int Daemon::run() {
  signals_.async_wait([this](const boost::system::error_code& error, int signal) {
    if (!error) on_signal(signal);
  });
  if (!reader_->connect([this] { return state_ == State::kDone; })) {
    spdlog::info("stopped before the NATS server could be reached");
    return kExitOk;
  }
  const ConsumerFacts facts = reader_->bind_consumer();
  if (facts.ack_policy == AckPolicy::kNone) {
    spdlog::warn("consumer \"{}\" has AckPolicy none: delivery is at-most-once. The server forgets each message "
                 "once sent, so jetfan cannot redeliver one a handler failed or never got.",
                 config_.consumer.durable);
  }

  CoreSettings settings;
  for (const auto& handler : config_.handlers) {
    settings.handlers.push_back(HandlerLimits{static_cast<std::uint32_t>(handler.max_inflight), handler.ack_timeout});
  }
  settings.ack_policy = facts.ack_policy;
  ack_policy_ = facts.ack_policy;
  settings.nak_delay = config_.delivery.nak_delay;
  settings.nak_delay_max = config_.delivery.nak_delay_max;
  settings.remember = config_.delivery.remember;
  // Touch held messages well inside AckWait, so the server never redelivers what jetfan owns.
  settings.keepalive = std::max(facts.ack_wait / 3, Duration(50));
  settings.max_deliver = facts.max_deliver;
  core_ = std::make_unique<DispatchCore>(std::move(settings));

  std::size_t max_held = 10000;
  if (config_.consumer.max_held) {
    max_held = static_cast<std::size_t>(*config_.consumer.max_held);
  } else if (facts.max_ack_pending > 0) {
    max_held = static_cast<std::size_t>(facts.max_ack_pending);
  }

  listener_ = std::make_unique<HandlerListener>(io_, config_.socket, *this);
  listener_->start([this](std::shared_ptr<HandlerSession> session) {
    sessions_.emplace(session->id(), session);
    session->start();
  });
  reader_->start([this](std::vector<NatsMsgPtr>& batch) { on_messages(batch); }, max_held);
  reader_->top_up(0);
  state_ = State::kServing;
  housekeeping();

  std::string handlers;
  for (const auto& handler : config_.handlers) {
    handlers += (handlers.empty() ? "" : ", ") + handler.name + " (" + std::to_string(handler.patterns.size()) +
                " pattern" + (handler.patterns.size() == 1 ? "" : "s") + ")";
  }
  spdlog::info("serving consumer \"{}\" of stream \"{}\" on {}; handlers: {}; holding at most {} messages",
               config_.consumer.durable, config_.consumer.stream, config_.socket.path, handlers, max_held);
  sd_notify(0, "READY=1");

  io_.run();
  return kExitOk;
}

void Daemon::on_signal(int signal) {
  signals_.async_wait([this](const boost::system::error_code& error, int next) {
    if (!error) on_signal(next);
  });
  const char* name = signal == SIGTERM ? "SIGTERM" : "SIGINT";
  if (state_ == State::kServing) {
    spdlog::info("{}: draining", name);
    begin_drain();
  } else if (state_ == State::kDraining) {
    spdlog::warn("{} again: stopping now", name);
    finish();
  } else {
    state_ = State::kDone;
  }
}

void Daemon::on_messages(std::vector<NatsMsgPtr>& batch) {
  const TimePoint now = Clock::now();
  for (auto& message : batch) {
    const std::string_view subject = natsMsg_GetSubject(message.get());
    const auto ack = parse_ack_subject(natsMsg_GetReply(message.get()));
    const auto key = key_of(subject, config_.key.strip_prefix);
    if (!ack || !key) {
      ++unroutable_;
      spdlog::error("message on subject \"{}\" (stream seq {}) has no key: it does not start with key.strip_prefix "
                    "\"{}\". Terminated it (+TERM): no handler can be chosen for it, so redelivering it would loop.",
                    subject, ack ? std::to_string(ack->stream_seq) : "?", config_.key.strip_prefix);
      if (ack_policy_ != AckPolicy::kNone) reader_->term(message.get());
      continue;
    }
    const MessageHandle handle = next_handle_++;
    const HandlerMask recipients = matcher_.match(*key);
    Stored stored{nullptr, *key, header_block(message.get()), ack->stream_seq, ack->deliveries};
    stored.message = std::move(message);
    stored_.emplace(handle, std::move(stored));
    core_->arrive(Arrival{handle, ack->stream_seq, ack->deliveries, recipients}, now);
  }
  settle();
}

void Daemon::settle() {
  apply_effects();
  if (state_ == State::kServing) reader_->top_up(core_->held());
  if (state_ == State::kDraining && core_->in_flight() == 0) {
    finish();
    return;
  }
  arm_wakeup();
}

void Daemon::apply_effects() {
  auto& effects = core_->effects();
  std::size_t kept_alive = 0;
  for (const Effect& effect : effects) {
    auto stored = stored_.find(effect.message);
    if (stored == stored_.end()) continue;
    natsMsg* message = stored->second.message.get();
    switch (effect.kind) {
      case Effect::Kind::kDeliver: {
        auto session = sessions_.find(effect.connection);
        if (session == sessions_.end()) break;
        const auto& s = stored->second;
        proto::append_msg(session->second->out(), effect.delivery, s.key, s.stream_seq, s.deliveries, s.headers,
                          std::string_view(natsMsg_GetData(message), static_cast<std::size_t>(natsMsg_GetDataLength(message))));
        if (dirty_.empty() || dirty_.back() != session->second) dirty_.push_back(session->second);
        break;
      }
      case Effect::Kind::kAck: reader_->ack(message); break;
      case Effect::Kind::kNak:
        reader_->nak(message, state_ == State::kServing ? effect.delay : reader_->handback_delay());
        break;
      case Effect::Kind::kTerm: reader_->term(message); break;
      case Effect::Kind::kWip:
        reader_->wip(message);
        ++kept_alive;
        break;
      case Effect::Kind::kRelease: stored_.erase(stored); break;
    }
  }
  effects.clear();
  if (kept_alive > 0) spdlog::debug("kept {} held message(s) alive at the server (+WPI)", kept_alive);
  for (auto& session : dirty_) session->flush();
  dirty_.clear();
}

void Daemon::arm_wakeup() {
  const auto wake = core_->next_wakeup();
  if (!wake || (armed_for_ && *armed_for_ <= *wake)) return;
  armed_for_ = wake;
  wakeup_.expires_at(*wake);
  wakeup_.async_wait([this](const boost::system::error_code& error) {
    if (error) return;
    armed_for_.reset();
    core_->tick(Clock::now());
    settle();
  });
}

void Daemon::housekeeping() {
  reader_->check_liveness();
  if (state_ == State::kServing) reader_->top_up(core_->held());
  housekeeping_.expires_after(std::chrono::milliseconds(500));
  housekeeping_.async_wait([this](const boost::system::error_code& error) {
    if (!error) housekeeping();
  });
}

std::string Daemon::describe(const HandlerSession& session) const {
  return "\"" + session.handler_name + "\" (" + session.peer() + ")";
}

std::optional<std::string> Daemon::on_hello(HandlerSession& session, const proto::Command& hello) {
  if (state_ != State::kServing) return "jetfan is shutting down";
  if (hello.version != proto::kVersion) {
    return "protocol version " + std::to_string(hello.version) + " is not supported; this jetfan speaks version " +
           std::to_string(proto::kVersion);
  }
  std::size_t index = config_.handlers.size();
  std::string declared;
  for (std::size_t h = 0; h < config_.handlers.size(); ++h) {
    if (config_.handlers[h].name == hello.handler) index = h;
    declared += (declared.empty() ? "" : ", ") + config_.handlers[h].name;
  }
  if (index == config_.handlers.size()) {
    return "unknown handler \"" + hello.handler + "\"; " + config_.file + " declares: " + declared;
  }
  const auto& handler = config_.handlers[index];
  session.handler = index;
  session.handler_name = handler.name;
  proto::append_ready(session.out(), handler.name, static_cast<std::uint32_t>(handler.max_inflight), handler.patterns);
  session.flush();
  spdlog::info("handler {} connected", describe(session));
  core_->connect(session.id(), index, Clock::now());
  settle();
  return std::nullopt;
}

void Daemon::on_command(HandlerSession& session, const proto::Command& command) {
  const TimePoint now = Clock::now();
  bool known = true;
  switch (command.verb) {
    case proto::Verb::kAck: known = core_->ack(session.id(), command.id, now); break;
    case proto::Verb::kNak: {
      std::optional<Duration> delay;
      if (command.delay_ms) delay = Duration(static_cast<Duration::rep>(std::min<std::uint64_t>(*command.delay_ms, 1ULL << 40)));
      known = core_->nak(session.id(), command.id, delay, now);
      break;
    }
    case proto::Verb::kTerm:
      known = core_->term(session.id(), command.id, now);
      if (known) {
        spdlog::warn("handler {} terminated delivery {} as poison: {}", describe(session), command.id,
                     command.reason.empty() ? "(no reason given)" : command.reason);
      }
      break;
    case proto::Verb::kWip: known = core_->wip(session.id(), command.id, now); break;
    case proto::Verb::kPing:
      proto::append_pong(session.out());
      session.flush();
      return;
    case proto::Verb::kPong:
    case proto::Verb::kHello: return;
  }
  if (!known) {
    spdlog::debug("handler {}: {} {} names no delivery in flight on this connection (late, after a timeout?); ignored",
                  describe(session), proto::to_string(command.verb), command.id);
  }
  settle();
}

void Daemon::on_closed(HandlerSession& session) {
  const auto keep = sessions_.find(session.id());
  if (session.handler && state_ != State::kDone) {
    spdlog::info("handler {} disconnected; what it had unconfirmed will be redelivered", describe(session));
    if (core_) {
      core_->disconnect(session.id(), Clock::now());
    }
  }
  std::shared_ptr<HandlerSession> alive;  // the session must outlive this call
  if (keep != sessions_.end()) {
    alive = keep->second;
    sessions_.erase(keep);
  }
  if (core_ && state_ != State::kDone) settle();
}

void Daemon::begin_drain() {
  state_ = State::kDraining;
  sd_notify(0, "STOPPING=1");
  reader_->stop_pulling();
  listener_->stop();
  const std::size_t in_flight = core_->in_flight();
  spdlog::info("draining: {} deliveries in flight may finish within {}ms; {} other held message(s) handed back now, "
               "redelivered in {}ms (once jetfan's pull requests at the server have expired)",
               in_flight, config_.delivery.drain_timeout.count(), core_->held() - std::min(core_->held(), in_flight),
               reader_->handback_delay().count());
  core_->begin_drain(Clock::now());
  drain_timer_.expires_after(config_.delivery.drain_timeout);
  drain_timer_.async_wait([this](const boost::system::error_code& error) {
    if (error || state_ != State::kDraining) return;
    spdlog::warn("drain_timeout reached with {} deliveries still in flight; handing them back", core_->in_flight());
    finish();
  });
  settle();
}

void Daemon::finish() {
  if (state_ == State::kDone) return;
  state_ = State::kDone;
  core_->abandon_all(Clock::now());
  apply_effects();
  const auto& c = core_->counters();
  spdlog::info("stopped: {} messages arrived, {} acked, {} nak'd, {} terminated, {} with no recipient, {} unroutable; "
               "{} deliveries to handlers",
               c.arrived, c.acked, c.naked, c.termed, c.no_recipient, unroutable_, c.deliveries);
  reader_->close(Duration(2000));
  auto sessions = std::move(sessions_);
  for (auto& [id, session] : sessions) session->close();
  signals_.cancel();
  wakeup_.cancel();
  housekeeping_.cancel();
  drain_timer_.cancel();
  io_.stop();
}

}  // namespace jetfan
