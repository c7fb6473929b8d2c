#include "session_fuzz_owner.hpp"

#include <cstdio>
#include <cstdlib>

#include "jetstream_subject.hpp"

namespace jetfan::fuzz {

namespace {
constexpr const char* kHeaderBlock = "NATS/1.0\r\nX-Fuzz: yes\r\n\r\n";

ServeSettings serve_settings(const Config& config) {
  auto derived = derive_serve_settings(config, fake_consumer_facts());
  if (!derived.settings) broken("the fuzzer's config does not derive: " + derived.error);
  return std::move(*derived.settings);
}
}  // namespace

void broken(const std::string& rule) {
  std::fprintf(stderr, "session_fuzz: broken: %s\n", rule.c_str());
  std::abort();
}

FuzzOwner::FuzzOwner(const Config& config, MessageBytesArena& arena, TimePoint start)
    : config_(config),
      arena_(arena),
      upstream_(arena, std::string(kPrefix)),
      time_(start),
      notifier_(notifier_io_),
      serve_(serve_settings(config_)),
      checker_(serve_.core),
      dispatcher_(config_, serve_, upstream_, time_, notifier_, arena, DispatcherHooks{}) {
  dispatcher_.set_tap(this);
  dispatcher_.start();
}

FuzzOwner::~FuzzOwner() { dispatcher_.set_tap(nullptr); }

std::optional<ConnectionId> FuzzOwner::accept(HandlerSession::Socket socket) {
  return dispatcher_.accept(std::move(socket));
}

void FuzzOwner::publish(std::uint64_t seq, const std::string& subject, const std::string& payload, bool headers) {
  if (done()) return;
  require(published_.emplace(seq, Published{subject, payload, headers}).second, "a sequence published twice");
  arrive(seq, 1);
}

void FuzzOwner::redeliver(std::uint64_t seq, std::uint64_t deliveries) {
  if (done()) return;
  require(published_.count(seq) == 1, "a copy of a sequence never published");
  arrive(seq, deliveries);
}

void FuzzOwner::arrive(std::uint64_t seq, std::uint64_t deliveries) {
  const Published& p = published_.at(seq);
  upstream_.deliver(FakeUpstream::Message{seq, p.subject, p.payload, p.headers ? kHeaderBlock : "", deliveries, 0});
}

void FuzzOwner::server_says(std::uint8_t what, std::uint8_t which) {
  if (done()) return;
  // A deleted consumer is left out: the core then forgets confirmations, and the checker assumes
  // it forgets none.
  static const char* const codes[][2] = {{"100", ""},
                                         {"404", "No Messages"},
                                         {"408", "Request Timeout"},
                                         {"409", "Leadership Change"},
                                         {"409", "Message Size Exceeds MaxBytes"},
                                         {"503", "No Responders"}};
  const auto& pulls = upstream_.pulls;
  switch (what % 8) {
    case 6:
      upstream_.probe_answer((which & 1) != 0);
      return;
    case 7:
      upstream_.reconnect();
      return;
    default: {
      const std::uint64_t pull = pulls.empty() ? which : pulls[which % pulls.size()].id;
      upstream_.status(pull, codes[what % 8][0], codes[what % 8][1]);
      return;
    }
  }
}

void FuzzOwner::advance(Duration by) {
  if (done()) return;
  time_.advance(by);
}

void FuzzOwner::begin_drain() {
  if (done()) return;
  dispatcher_.begin_drain();
}

void FuzzOwner::finish() { dispatcher_.finish(); }

void FuzzOwner::arrived(const Arrival& arrival) {
  copies_[arrival.message] = {arrival.stream_seq, arrival.deliveries};
  checker_.arrived(arrival);
}

void FuzzOwner::connected(ConnectionId connection, std::size_t handler) {
  require(!admitted_.count(connection), "a connection is admitted twice");
  admitted_[connection] = handler;
  expected_[connection].push_back(Expected{proto::Frame::Kind::kReady, handler});
  checker_.connected(connection, handler);
}

void FuzzOwner::disconnected(ConnectionId connection) {
  add_to_digest(connection);
  admitted_.erase(connection);
  checker_.disconnected(connection);
}

void FuzzOwner::answered(ConnectionId connection, const proto::Command& command, bool known) {
  require(admitted_.count(connection) == 1, "a command reached the dispatcher from a connection that is not admitted");
  using Answer = DispatchChecker::Answer;
  Answer answer = Answer::kAck;
  switch (command.verb) {
    case proto::Verb::kNak:
      answer = Answer::kNak;
      break;
    case proto::Verb::kTerm:
      answer = Answer::kTerm;
      break;
    case proto::Verb::kWip:
      answer = Answer::kWip;
      break;
    default:
      break;
  }
  require_none(checker_.answered(connection, command.id, answer, known));
}

void FuzzOwner::ponged(ConnectionId connection) {
  expected_[connection].push_back(Expected{proto::Frame::Kind::kPong});
}

void FuzzOwner::answered_publish(ConnectionId connection, std::uint64_t request, bool stored) {
  require(admitted_.count(connection) == 1, "a PUB was answered on a connection that is not admitted");
  expected_[connection].push_back(
      Expected{stored ? proto::Frame::Kind::kPubOk : proto::Frame::Kind::kPubErr, 0, request});
}

void FuzzOwner::began_drain(TimePoint now, Duration handback_delay) { checker_.began_drain(now, handback_delay); }

void FuzzOwner::abandoned_all() { checker_.abandoned_all(); }

void FuzzOwner::effects(std::span<const Effect> effects, TimePoint now) {
  require_none(checker_.check(effects, now));
  for (const Effect& effect : effects) {
    for (const std::uint64_t v : {static_cast<std::uint64_t>(effect.kind), effect.message, effect.connection,
                                  effect.delivery, static_cast<std::uint64_t>(effect.delay.count())}) {
      add_to_digest(v);
    }
    const auto copy = copies_.find(effect.message);
    require(copy != copies_.end(), "an effect names a message that never arrived");
    if (effect.kind == Effect::Kind::kDeliver) {
      expected_[effect.connection].push_back(Expected{proto::Frame::Kind::kMsg, 0, effect.delivery, copy->second.first,
                                                      effect.deliveries, copy->second.second});
    }
  }
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
  // jetfan's own PING (idle) and ERR (closing) come from the session, between the dispatcher's frames.
  if (frame.kind == proto::Frame::Kind::kPing || frame.kind == proto::Frame::Kind::kErr) return;
  auto& queue = expected_[id];
  require(!queue.empty(), "a peer read a frame jetfan never made for it");
  const Expected e = queue.front();
  queue.pop_front();
  require(frame.kind == e.kind, "a peer read a frame other than the next one made for it");
  if (frame.kind == proto::Frame::Kind::kReady) {
    const auto& h = config_.handlers[e.handler];
    require(frame.ready.version >= proto::kVersion1 && frame.ready.version <= proto::kLatestVersion &&
                frame.ready.handler == h.name &&
                frame.ready.max_unconfirmed == static_cast<std::uint32_t>(h.max_inflight) &&
                frame.ready.patterns == h.patterns,
            "READY does not say what was declared");
  } else if (frame.kind == proto::Frame::Kind::kPubOk || frame.kind == proto::Frame::Kind::kPubErr) {
    require(frame.publish.id == e.id, "a PUB's answer names another request id");
  } else if (frame.kind == proto::Frame::Kind::kMsg) {
    const Published& p = published_.at(e.seq);
    const auto& d = frame.delivery;
    require(d.id == e.id && d.stream_seq == e.seq && d.deliveries == e.deliveries &&
                d.key == *jetstream::key_of(p.subject, kPrefix) && d.payload == p.payload &&
                d.headers == (p.headers ? kHeaderBlock : ""),
            "a MSG's line or body differs from the delivery the core made");
    // A version 2 connection also gets the subject and the server's count (a version 1 one never does).
    require(d.subject.empty() || d.subject == p.subject, "a version 2 MSG names another subject");
    require(d.subject.empty() ? d.server_deliveries == 0 : d.server_deliveries == e.server_deliveries,
            "a version 2 MSG gives another server delivery count");
    require(d.deliveries >= 1, "a MSG counts no delivery");
  }
}

void FuzzOwner::check_state() const {
  require_none(checker_.check_state(dispatcher_.core()));
  if (done()) return;
  std::vector<std::size_t> admitted(config_.handlers.size(), 0);
  for (const auto& [id, handler] : admitted_) ++admitted[handler];
  for (std::size_t h = 0; h < config_.handlers.size(); ++h) {
    require(admitted[h] == dispatcher_.instances(h), "the instance count disagrees with the admitted connections");
    const auto max = config_.handlers[h].max_instances;
    require(max == 0 || admitted[h] <= max, "more instances than max_instances");
  }
  require(arena_.messages >= dispatcher_.messages_stored(), "message bytes freed while the dispatcher holds them");
}

void FuzzOwner::check_end() const {
  require(done(), "check_end before finish");
  require_none(checker_.check_end(dispatcher_.core()));
  require(dispatcher_.messages_stored() == 0, "messages stored after the end");
  require(arena_.messages == 0 && arena_.bytes == 0, "message bytes alive after every session closed");
}

}  // namespace jetfan::fuzz
