#include "session_fuzz_owner.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "jetstream_subject.hpp"

namespace jetfan::fuzz {

namespace {
// As Dispatcher: a handler's NAK delay is capped before it reaches the core.
constexpr std::uint64_t kMaxNakDelayMs = 1ULL << 40;
constexpr const char* kHeaderBlock = "NATS/1.0\r\nX-Fuzz: yes\r\n\r\n";

CoreSettings core_settings(const std::vector<DeclaredHandler>& handlers) {
  CoreSettings settings;
  for (const auto& h : handlers) settings.handlers.push_back(HandlerLimits{h.max_inflight, Duration(30000)});
  settings.ack_policy = AckPolicy::kExplicit;
  settings.nak_delay = Duration(1000);
  settings.nak_delay_max = Duration(60000);
  settings.remember = 100000;  // more than one input makes: the checker's rules about confirmations hold
  settings.keepalive = Duration(10000);
  return settings;
}
}  // namespace

void broken(const std::string& rule) {
  std::fprintf(stderr, "session_fuzz: broken: %s\n", rule.c_str());
  std::abort();
}

FuzzOwner::FuzzOwner(std::vector<DeclaredHandler> handlers, const SocketSettings& socket, ConnectionLimits limits,
                     LiveBytes& live, TimePoint start)
    : handlers_(std::move(handlers)),
      socket_(socket),
      limits_(limits),
      now_(start),
      core_settings_(core_settings(handlers_)),
      core_(core_settings_),
      checker_(core_settings_),
      live_(live),
      instances_(handlers_.size(), 0) {
  for (std::size_t h = 0; h < handlers_.size(); ++h) {
    rules_.push_back(handlers_[h].rule);
    for (const auto& pattern : handlers_[h].patterns) matcher_.add(pattern, h);
  }
}

FuzzOwner::~FuzzOwner() {
  // Sessions refer to this object as their owner: close them before it goes (as Dispatcher does).
  done_ = true;
  auto sessions = std::move(sessions_);
  for (auto& [id, session] : sessions) session->close();
}

std::optional<ConnectionId> FuzzOwner::accept(HandlerSession::Socket socket) {
  if (core_.draining() || done_) return std::nullopt;
  const ConnectionId id = next_id_++;
  auto session = std::make_shared<HandlerSession>(std::move(socket), id, *this, socket_);
  // From here on as Dispatcher::on_accepted.
  sessions_.emplace(id, session);
  session->start();
  switch (admit_connection(sessions_.size() - 1, unidentified_.size(), limits_)) {
    case ConnectionVerdict::kAccept:
      break;
    case ConnectionVerdict::kAcceptEvictingOldestUnidentified:
      while (!unidentified_order_.empty()) {
        const ConnectionId oldest = unidentified_order_.front();
        unidentified_order_.pop_front();
        const auto found = sessions_.find(oldest);
        if (found != sessions_.end() && unidentified_.count(oldest) && !found->second->ending()) {
          found->second->fail("evicted");
          break;
        }
      }
      break;
    case ConnectionVerdict::kRefuse:
      session->fail("too many connections");
      return id;
  }
  unidentified_.insert(id);
  unidentified_order_.push_back(id);
  return id;
}

std::optional<std::string> FuzzOwner::on_hello(HandlerSession& session, const proto::Command& hello) {
  const Admission admission = admit(rules_, Hello{hello.handler, hello.version}, session.credentials(), instances_,
                                    !core_.draining() && !done_, proto::kVersion);
  if (!admission.handler) return admission.refusal;
  const std::size_t h = *admission.handler;
  require(!admitted_.count(session.id()), "a connection is admitted twice");
  session.admit(h, handlers_[h].name);
  unidentified_.erase(session.id());
  while (!unidentified_order_.empty() && !unidentified_.count(unidentified_order_.front())) {
    unidentified_order_.pop_front();
  }
  ++instances_[h];
  admitted_.insert(session.id());
  session.send_ready(handlers_[h].max_inflight, handlers_[h].patterns);
  expected_[session.id()].push_back(Expected{proto::Frame::Kind::kReady, h});
  session.flush();
  core_.connect(session.id(), h, now_);
  checker_.connected(session.id(), h);
  after_input();
  return std::nullopt;
}

void FuzzOwner::on_command(HandlerSession& session, const proto::Command& command) {
  const ConnectionId id = session.id();
  require(admitted_.count(id) == 1, "a command reached the owner from a connection that is not admitted");
  using Answer = DispatchChecker::Answer;
  Answer answer = Answer::kAck;
  bool known = false;
  switch (command.verb) {
    case proto::Verb::kAck:
      known = core_.ack(id, command.id, now_);
      break;
    case proto::Verb::kNak: {
      std::optional<Duration> delay;
      if (command.delay_ms) delay = Duration(static_cast<Duration::rep>(std::min(*command.delay_ms, kMaxNakDelayMs)));
      known = core_.nak(id, command.id, delay, now_);
      answer = Answer::kNak;
      break;
    }
    case proto::Verb::kTerm:
      known = core_.term(id, command.id, now_);
      answer = Answer::kTerm;
      break;
    case proto::Verb::kWip:
      known = core_.wip(id, command.id, now_);
      answer = Answer::kWip;
      break;
    case proto::Verb::kPing:
      session.send_pong();
      expected_[id].push_back(Expected{proto::Frame::Kind::kPong});
      session.flush();
      return;
    case proto::Verb::kPong:
    case proto::Verb::kHello:
      return;
  }
  require_none(checker_.answered(id, command.id, answer, known));
}

void FuzzOwner::on_input_consumed(HandlerSession&) { after_input(); }

void FuzzOwner::on_closed(HandlerSession& session) {
  add_to_digest(session.id());
  const auto entry = sessions_.find(session.id());
  if (entry == sessions_.end()) return;
  const std::shared_ptr<HandlerSession> alive = entry->second;
  unidentified_.erase(session.id());
  admitted_.erase(session.id());
  if (session.handler() && !done_) {
    --instances_[*session.handler()];
    core_.disconnect(session.id(), now_);
    checker_.disconnected(session.id());
    after_input();
  }
  sessions_.erase(session.id());
}

void FuzzOwner::publish(std::uint64_t seq, const std::string& subject, const std::string& payload, bool headers) {
  if (done_) return;
  require(published_.emplace(seq, Published{subject, payload, headers}).second, "a sequence published twice");
  arrive(seq, 1);
}

void FuzzOwner::redeliver(std::uint64_t seq, std::uint64_t deliveries) {
  if (done_) return;
  require(published_.count(seq) == 1, "a copy of a sequence never published");
  arrive(seq, deliveries);
}

void FuzzOwner::arrive(std::uint64_t seq, std::uint64_t deliveries) {
  const Published& p = published_.at(seq);
  natsMsg* raw = nullptr;
  if (natsMsg_Create(&raw, p.subject.c_str(), nullptr, p.payload.data(), static_cast<int>(p.payload.size())) !=
      NATS_OK) {
    broken("natsMsg_Create failed");
  }
  NatsMsgPtr message(raw);
  const MessageHandle handle = next_handle_++;
  const auto key = key_of(p.subject, kPrefix);
  auto bytes = make_message_bytes(std::move(message), p.headers ? kHeaderBlock : "", live_);
  // As Dispatcher::arrive: the recipients are the handlers whose patterns match the key.
  const Arrival arrival{handle, seq, deliveries, key ? matcher_.match(*key) : HandlerMask{0}, !key};
  stored_.emplace(handle, Stored{std::move(bytes), key ? std::string(*key) : "", seq, deliveries});
  core_.arrive(arrival, now_);
  checker_.arrived(arrival);
  after_input();
}

void FuzzOwner::advance(Duration by) {
  if (done_) return;
  now_ += by;
  core_.tick(now_);
  after_input();
}

void FuzzOwner::hand_back_oldest(std::size_t handler, std::size_t keep) {
  if (done_ || core_.draining()) return;
  core_.hand_back_oldest(handler % handlers_.size(), keep, now_);
  after_input();
}

void FuzzOwner::begin_drain(Duration handback) {
  if (done_ || core_.draining()) return;
  core_.begin_drain(now_, handback);
  checker_.began_drain(now_, handback);
  after_input();
}

void FuzzOwner::finish() {
  if (done_) return;
  if (!core_.draining()) begin_drain(Duration(0));
  if (done_) return;  // the drain had nothing in flight and finished at once
  done_ = true;
  core_.abandon_all(now_);
  checker_.abandoned_all();
  apply_effects();
  auto sessions = std::move(sessions_);
  for (auto& [id, session] : sessions) session->close();
}

void FuzzOwner::after_input() {
  apply_effects();
  if (core_.draining() && !done_ && core_.in_flight() == 0) finish();
}

void FuzzOwner::apply_effects() {
  auto& effects = core_.effects();
  require_none(checker_.check(effects, now_));
  for (const Effect& effect : effects) {
    for (const std::uint64_t v : {static_cast<std::uint64_t>(effect.kind), effect.message, effect.connection,
                                  effect.delivery, static_cast<std::uint64_t>(effect.delay.count())}) {
      add_to_digest(v);
    }
    auto stored = stored_.find(effect.message);
    require(stored != stored_.end(), "an effect names a message the owner does not hold");
    switch (effect.kind) {
      case Effect::Kind::kDeliver: {
        auto session = sessions_.find(effect.connection);
        require(session != sessions_.end(), "a MSG for a connection that is gone");
        const auto& s = stored->second;
        session->second->send_msg(effect.delivery, s.key, s.seq, s.deliveries, s.message);
        expected_[effect.connection].push_back(
            Expected{proto::Frame::Kind::kMsg, 0, effect.delivery, s.seq, s.deliveries});
        if (dirty_.empty() || dirty_.back() != session->second) dirty_.push_back(session->second);
        break;
      }
      case Effect::Kind::kRelease:
        stored_.erase(stored);
        break;
      default:
        break;
    }
  }
  effects.clear();
  // As Dispatcher::apply_effects: a flush can close a session, whose close applies effects again.
  std::vector<std::shared_ptr<HandlerSession>> dirty;
  dirty.swap(dirty_);
  for (auto& session : dirty) session->flush();
}

void FuzzOwner::add_to_digest(std::uint64_t value) {
  for (int i = 0; i < 8; ++i) {
    digest_ = (digest_ ^ ((value >> (8 * i)) & 0xff)) * 1099511628211ULL;
  }
}

void FuzzOwner::on_peer_frame(ConnectionId id, const proto::Frame& frame) {
  add_to_digest(id);
  add_to_digest(static_cast<std::uint64_t>(frame.kind));
  add_to_digest(frame.delivery.id);
  // jetfan's own PING (idle) and ERR (closing) come from the session, between the owner's frames.
  if (frame.kind == proto::Frame::Kind::kPing || frame.kind == proto::Frame::Kind::kErr) return;
  auto& queue = expected_[id];
  require(!queue.empty(), "a peer read a frame jetfan's owner never sent it");
  const Expected e = queue.front();
  queue.pop_front();
  require(frame.kind == e.kind, "a peer read a frame other than the next one sent to it");
  if (frame.kind == proto::Frame::Kind::kReady) {
    const auto& h = handlers_[e.handler];
    require(frame.ready.version == proto::kVersion && frame.ready.handler == h.name &&
                frame.ready.max_unconfirmed == h.max_inflight && frame.ready.patterns == h.patterns,
            "READY does not say what was declared");
  } else if (frame.kind == proto::Frame::Kind::kMsg) {
    const Published& p = published_.at(e.seq);
    const auto& d = frame.delivery;
    require(d.id == e.id && d.stream_seq == e.seq && d.deliveries == e.deliveries &&
                d.key == *key_of(p.subject, kPrefix) && d.payload == p.payload &&
                d.headers == (p.headers ? kHeaderBlock : ""),
            "a MSG's line or body differs from the delivery the core made");
  }
}

void FuzzOwner::check_state() const {
  require_none(checker_.check_state(core_));
  if (done_) return;
  std::vector<std::size_t> admitted(handlers_.size(), 0);
  for (const ConnectionId id : admitted_) ++admitted[*sessions_.at(id)->handler()];
  for (std::size_t h = 0; h < handlers_.size(); ++h) {
    require(admitted[h] == instances_[h], "the instance count disagrees with the admitted connections");
    const auto max = handlers_[h].rule.max_instances;
    require(max == 0 || instances_[h] <= max, "more instances than max_instances");
  }
  require(live_.messages >= stored_.size(), "message bytes freed while the owner holds them");
}

void FuzzOwner::check_end() const {
  require(done_, "check_end before finish");
  require_none(checker_.check_end(core_));
  require(stored_.empty(), "messages stored after the end");
  require(live_.messages == 0 && live_.bytes == 0, "message bytes alive after every session closed");
}

}  // namespace jetfan::fuzz
