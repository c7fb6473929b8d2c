#pragma once
// FuzzOwner: the SessionOwner of the session fuzzer (session_fuzz.cpp). It wires real
// HandlerSessions to a real DispatchCore the way Dispatcher does (admission, connection limits,
// confirmations, effects applied with one flush per session), with a virtual clock and no NATS,
// and checks as it goes:
//   - the core's rules, by a DispatchChecker (core/dispatch_checker.hpp) told every input: every
//     effect before it is applied, the core's state after every input, and at the end that nothing
//     is held and every message was released. Among them: a confirmation is accepted exactly when
//     the delivery is in flight on that connection, so no peer settles another's delivery;
//   - the session's side: commands reach the owner only from admitted connections; no handler has
//     more instances than max_instances; what a peer reads is a well-formed stream holding exactly
//     the frames appended for it, in order (READY as declared, each MSG as the core delivered it),
//     with only jetfan's own PING and ERR in between;
//   - memory: message bytes live while the owner holds them, and none once every session is gone.
// A broken rule prints what broke and aborts, which libFuzzer reports as a crash.
//
// Thread: the fuzzer's, which also polls the io_context the sessions run on.

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "admission.hpp"
#include "dispatch_checker.hpp"
#include "dispatch_core.hpp"
#include "handler_session.hpp"
#include "message_bytes.hpp"
#include "protocol.hpp"
#include "topic_pattern.hpp"

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

struct DeclaredHandler {
  std::string name;
  std::vector<std::string> patterns;
  std::uint32_t max_inflight;
  AdmissionRule rule;
};

class FuzzOwner final : public SessionOwner {
 public:
  // Messages' keys are their subjects less kPrefix; the handlers' patterns match keys.
  static constexpr std::string_view kPrefix = "ev.";

  // `socket` and `live` must outlive the owner and every session it starts.
  FuzzOwner(std::vector<DeclaredHandler> handlers, const SocketSettings& socket, ConnectionLimits limits,
            LiveBytes& live, TimePoint start);
  ~FuzzOwner();

  // A new connection, as HandlerListener hands it to Dispatcher::on_accepted. Its id, or nullopt
  // when no connection is accepted any more (draining: the listener is closed).
  std::optional<ConnectionId> accept(HandlerSession::Socket socket);

  // A message from the server: a new sequence with its subject, payload and whether it has headers.
  void publish(std::uint64_t seq, const std::string& subject, const std::string& payload, bool headers);
  // Another copy of a sequence published before, its `deliveries`-th.
  void redeliver(std::uint64_t seq, std::uint64_t deliveries);
  void advance(Duration by);
  // What Dispatcher does when the consumer is full and a handler is set to hand its backlog back.
  void hand_back_oldest(std::size_t handler, std::size_t keep);
  void begin_drain(Duration handback);
  // What Dispatcher::finish does: hands everything back and closes every session.
  void finish();

  // A frame a peer read on connection `id`; checked against what was appended for it.
  void on_peer_frame(ConnectionId id, const proto::Frame& frame);
  // Sequences the server could deliver again, by what the checker knows of them.
  std::vector<std::uint64_t> handed_back() const { return checker_.handed_back(); }
  std::vector<std::uint64_t> held() const { return checker_.held(); }
  std::vector<std::uint64_t> settled() const { return checker_.settled_at_server(); }
  // Checks the core's state and the owner's; after every input.
  void check_state() const;
  // After finish() and the io_context has run dry: nothing held, everything released.
  void check_end() const;
  // A digest of what happened: every effect of the core and every frame a peer read, in order. The
  // same input must give the same digest, whatever ran before it (scripts/fuzz.sh checks).
  std::uint64_t digest() const { return digest_; }

 private:
  struct Published {
    std::string subject;
    std::string payload;
    bool headers = false;
  };
  struct Stored {
    SharedMessage message;
    std::string key;
    std::uint64_t seq = 0;
    std::uint64_t deliveries = 0;
  };
  // What a peer should read next on one connection (jetfan's own PING and ERR come in between).
  struct Expected {
    proto::Frame::Kind kind;
    std::size_t handler = 0;  // kReady
    DeliveryId id = 0;        // kMsg
    std::uint64_t seq = 0;
    std::uint64_t deliveries = 0;
  };

  std::optional<std::string> on_hello(HandlerSession& session, const proto::Command& hello) override;
  void on_command(HandlerSession& session, const proto::Command& command) override;
  void on_input_consumed(HandlerSession& session) override;
  void on_failing(HandlerSession&, const std::string&) override {}
  bool busy(const HandlerSession& session) const override { return core_.in_flight(session.id()) > 0; }
  void on_closed(HandlerSession& session) override;

  void arrive(std::uint64_t seq, std::uint64_t deliveries);
  // As Dispatcher::after_input: apply the effects, and finish a drain with nothing left in flight.
  void after_input();
  // As Dispatcher::apply_effects, each effect checked first.
  void apply_effects();

  std::vector<DeclaredHandler> handlers_;
  std::vector<AdmissionRule> rules_;
  const SocketSettings& socket_;
  ConnectionLimits limits_;
  TimePoint now_;
  CoreSettings core_settings_;
  DispatchCore core_;
  DispatchChecker checker_;
  TopicMatcher matcher_;
  LiveBytes& live_;
  std::vector<std::size_t> instances_;
  std::unordered_map<ConnectionId, std::shared_ptr<HandlerSession>> sessions_;
  std::unordered_set<ConnectionId> unidentified_;
  std::deque<ConnectionId> unidentified_order_;
  std::unordered_set<ConnectionId> admitted_;  // and not closed
  std::vector<std::shared_ptr<HandlerSession>> dirty_;
  std::unordered_map<MessageHandle, Stored> stored_;
  std::map<std::uint64_t, Published> published_;
  std::unordered_map<ConnectionId, std::deque<Expected>> expected_;
  MessageHandle next_handle_ = 1;
  ConnectionId next_id_ = 1;
  bool done_ = false;
  std::uint64_t digest_ = 14695981039346656037ULL;  // FNV-1a
  void add_to_digest(std::uint64_t value);
};

}  // namespace jetfan::fuzz
