#pragma once
// FuzzOwner: the session fuzzer's jetfan (session_fuzz.cpp). A real Dispatcher with a FakeUpstream
// for the server and a ManualTimekeeper for time, whose sessions are real HandlerSessions on
// socketpairs; the owner keeps only the checks, told everything through the dispatcher's tap:
//   - the core's rules, by a DispatchChecker (core/dispatch_checker.hpp) told every input: every
//     effect before it is applied, the core's state after every input, and at the end that nothing
//     is held and every message was released. Among them: a confirmation is accepted exactly when
//     the delivery is in flight on that connection, so no peer settles another's delivery;
//   - the session's side: commands reach the dispatcher only from admitted connections; no
//     handler has more instances than max_instances; what a peer reads is a well-formed stream
//     holding exactly the frames made for it, in order (READY as declared, each MSG as the core
//     delivered it, PONG for its PING), with only jetfan's own PING and ERR in between;
//   - memory: message bytes live while the dispatcher holds them, and none once every session is
//     gone.
// A broken rule prints what broke and aborts, which libFuzzer reports as a crash.
//
// Thread: the fuzzer's, which also polls the io_context the sessions run on.

#include <deque>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "dispatch_checker.hpp"
#include "dispatcher.hpp"
#include "fake_upstream.hpp"
#include "timekeeper.hpp"

namespace jetfan::fuzz {

// Prints the rule and aborts.
[[noreturn]] void broken(const std::string& rule);
inline void require(bool holds, const std::string& rule) {
  if (!holds) broken(rule);
}
// Aborts when a DispatchChecker names a broken rule.
inline void require_none(const std::string& broken_rule) {
  if (!broken_rule.empty()) broken(broken_rule);
}

class FuzzOwner final : private DispatcherTap {
 public:
  // Messages' keys are their subjects less kPrefix; the handlers' patterns match keys.
  static constexpr std::string_view kPrefix = "ev.";

  // `config` declares the handlers and the socket's limits; it and `arena` must outlive the owner
  // and every session its dispatcher starts.
  FuzzOwner(const Config& config, MessageBytesArena& arena, TimePoint start);
  ~FuzzOwner();

  // A new connection, as the daemon's HandlerListener hands it on. Its id, or nullopt when no
  // connection is taken any more (draining).
  std::optional<ConnectionId> accept(HandlerSession::Socket socket);

  // A message from the server: a new sequence with its subject, payload and whether it has headers.
  void publish(std::uint64_t seq, const std::string& subject, const std::string& payload, bool headers);
  // Another copy of a sequence published before, its `deliveries`-th.
  void redeliver(std::uint64_t seq, std::uint64_t deliveries);
  // What else a server says: a status reply to one of the pulls (`which` picks one, and the code),
  // a probe's answer, or a reconnect.
  void server_says(std::uint8_t what, std::uint8_t which);
  void advance(Duration by);
  void begin_drain();
  // What the daemon's second SIGTERM does: hands everything back and closes every session.
  void finish();

  // A frame a peer read on connection `id`; checked against what was made for it.
  void on_peer_frame(ConnectionId id, const proto::Frame& frame);
  // Sequences the server could deliver again, by what the checker knows of them.
  std::vector<std::uint64_t> handed_back() const { return checker_.handed_back(); }
  std::vector<std::uint64_t> held() const { return checker_.held(); }
  std::vector<std::uint64_t> settled() const { return checker_.settled_at_server(); }
  // Checks the core's state and the dispatcher's; after every input.
  void check_state() const;
  // After finish() and the io_context has run dry: nothing held, everything released.
  void check_end() const;
  // A digest of what happened: every effect of the core and every frame a peer read, in order. The
  // same input must give the same digest, whatever ran before it (scripts/fuzz.sh checks).
  std::uint64_t digest() const { return digest_; }
  bool done() const { return !dispatcher_.serving() && !dispatcher_.draining(); }

 private:
  struct Published {
    std::string subject;
    std::string payload;
    bool headers = false;
  };
  // What a peer should read next on one connection (jetfan's own PING and ERR come in between).
  struct Expected {
    proto::Frame::Kind kind;
    std::size_t handler = 0;  // kReady
    DeliveryId id = 0;        // kMsg; kPubOk and kPubErr: the PUB's request id
    std::uint64_t seq = 0;
    std::uint64_t deliveries = 0;         // to the handler: the core's count (Effect::deliveries)
    std::uint64_t server_deliveries = 0;  // the copy's, as the server counted it
  };

  // DispatcherTap.
  void arrived(const Arrival& arrival) override;
  void connected(ConnectionId connection, std::size_t handler) override;
  void disconnected(ConnectionId connection) override;
  void answered(ConnectionId connection, const proto::Command& command, bool known) override;
  void ponged(ConnectionId connection) override;
  void answered_publish(ConnectionId connection, std::uint64_t request, bool stored) override;
  void began_drain(TimePoint now, Duration handback_delay) override;
  void stood_by(TimePoint now, bool standing, Duration handback_delay) override {
    checker_.stood_by(now, standing, handback_delay);
  }
  void abandoned_all() override;
  void effects(std::span<const Effect> effects, TimePoint now) override;

  void arrive(std::uint64_t seq, std::uint64_t deliveries);
  void add_to_digest(std::uint64_t value);

  const Config& config_;
  MessageBytesArena& arena_;
  FakeUpstream upstream_;
  ManualTimekeeper time_;
  boost::asio::io_context notifier_io_;  // the notifier's: nothing runs on it
  SystemdNotifier notifier_;
  ServeSettings serve_;  // what the dispatcher serves with, and the checker checks against
  DispatchChecker checker_;
  Dispatcher dispatcher_;
  std::unordered_map<ConnectionId, std::size_t> admitted_;                             // and not gone: to its handler
  std::unordered_map<MessageHandle, std::pair<std::uint64_t, std::uint64_t>> copies_;  // seq, deliveries
  std::map<std::uint64_t, Published> published_;
  std::unordered_map<ConnectionId, std::deque<Expected>> expected_;
  std::uint64_t digest_ = 14695981039346656037ULL;  // FNV-1a
};

}  // namespace jetfan::fuzz
