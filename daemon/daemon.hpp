#pragma once
// Daemon: `jetfan serve`. Wires the JetStream reader, the dispatch core and the handler socket
// together on one io_context, and runs it until SIGTERM or SIGINT and the drain that follows.
//
// Data path (ARCHITECTURE.md): cnats threads -> Ingress (locked queue, one post) -> on_messages ->
// DispatchCore::arrive -> effects -> MSG frames appended to sessions, replies published by the reader.
// Handler commands -> DispatchCore -> effects, likewise.
//
// Thread: everything here runs on the one thread that calls run(); it owns all dispatch state.

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <memory>
#include <unordered_map>

#include "config.hpp"
#include "dispatch_core.hpp"
#include "handler_listener.hpp"
#include "handler_session.hpp"
#include "jetstream_reader.hpp"
#include "topic_pattern.hpp"

namespace jetfan {

class Daemon final : public SessionOwner {
 public:
  explicit Daemon(Config config);
  ~Daemon() override;

  // Connects, binds the consumer, serves. Returns the exit status. Throws StartupError.
  int run();

  std::optional<std::string> on_hello(HandlerSession& session, const proto::Command& hello) override;
  void on_command(HandlerSession& session, const proto::Command& command) override;
  void on_closed(HandlerSession& session) override;

 private:
  struct Stored {
    NatsMsgPtr message;
    std::string_view key;  // points into message's subject
    std::string headers;   // the NATS/1.0 header block to forward, or empty
    std::uint64_t stream_seq = 0;
    std::uint64_t deliveries = 0;
  };

  void on_signal(int signal);
  void on_messages(std::vector<NatsMsgPtr>& batch);
  // Applies and clears the core's effects, flushes the sessions written to, keeps pulling and
  // re-arms the timer. Called after every input to the core.
  void settle();
  void apply_effects();
  void arm_wakeup();
  void housekeeping();
  void begin_drain();
  void finish();
  std::string describe(const HandlerSession& session) const;

  Config config_;
  boost::asio::io_context io_{1};
  boost::asio::signal_set signals_;
  boost::asio::steady_timer wakeup_, housekeeping_, drain_timer_;
  std::optional<TimePoint> armed_for_;
  TopicMatcher matcher_;
  std::unique_ptr<JetStreamReader> reader_;
  std::unique_ptr<DispatchCore> core_;
  std::unique_ptr<HandlerListener> listener_;
  std::unordered_map<ConnectionId, std::shared_ptr<HandlerSession>> sessions_;
  std::vector<std::shared_ptr<HandlerSession>> dirty_;
  std::unordered_map<MessageHandle, Stored> stored_;
  MessageHandle next_handle_ = 1;
  std::uint64_t unroutable_ = 0;
  AckPolicy ack_policy_ = AckPolicy::kExplicit;
  enum class State { kStarting, kServing, kDraining, kDone } state_ = State::kStarting;
};

}  // namespace jetfan
