#pragma once
// DispatchLog: what jetfan, serving, tells the operator about its handlers and their deliveries:
// one event a line, its facts as fields (logging.hpp), each saying what happened, to what, and what
// jetfan did about it. The Dispatcher decides; this says it (as Ninja's StatusPrinter beside its
// Builder). Warnings that can repeat once per message go through the RateLimitedLog it is given.
//
// Names a handler connection as `"<handler>" (<peer>)`, peer as HandlerSession::peer() says it.
//
// Thread: the io_context thread. `config` and `warnings` must outlive it.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "config.hpp"
#include "dispatch_core.hpp"
#include "effect.hpp"
#include "handler_session.hpp"
#include "held_messages.hpp"
#include "protocol.hpp"
#include "rate_limited_log.hpp"
#include "time.hpp"

namespace jetfan {

struct DescriptorPlan;

class DispatchLog {
 public:
  DispatchLog(const Config& config, RateLimitedLog& warnings) : config_(config), warnings_(warnings) {}

  // At start: each handler without an allow list, which any process that can open the socket may be.
  void unrestricted_handlers() const;
  // At start: the descriptor limit leaves `room` for fewer than socket.max_connections.
  void connections_limited(std::size_t max_connections, std::size_t room) const;
  // At start: how the descriptor limit is shared (DescriptorPlan).
  void descriptor_plan(const DescriptorPlan& plan) const;

  // A HELLO refused for `detail`; a handler admitted; one disconnected (what it had goes again); one
  // whose connection failed for `why` (rate-limited).
  void refused(const HandlerSession& session, std::string_view handler, const std::string& detail) const;
  void connected(const HandlerSession& session) const;
  void disconnected(const HandlerSession& session) const;
  void failing(const HandlerSession& session, const std::string& why, TimePoint now);
  // A handler's TERM of delivery `delivery` (poison); its NAK that said why (debug: NAKs may be
  // many); and an answer naming no delivery in flight.
  void terminated(const HandlerSession& session, std::uint64_t delivery, const std::string& reason) const;
  void nakked(const HandlerSession& session, std::uint64_t delivery, const std::string& reason) const;
  void unknown_answer(const HandlerSession& session, proto::Verb verb, std::uint64_t delivery) const;

  // The core's kFailed for `stored`: `session` is the connection, if still known; `ordered` says
  // whether its handler keeps the message (order_by) or it goes back to the server; `reason`, what
  // the handler's NAK said (empty: nothing). Rate-limited.
  void failed(const Effect& effect, const HeldMessage& stored, const HandlerSession* session, bool ordered,
              std::string_view reason, TimePoint now);
  // The core's kGaveUp: a retry budget used up with no dead_letter subject. Rate-limited.
  void gave_up(const Effect& effect, const HeldMessage& stored, TimePoint now);
  // Handler `handler` is ordered, but stream seq `stream_seq` has no order key for it. Rate-limited.
  void without_order_key(std::size_t handler, std::uint64_t stream_seq, const MessageBytes& bytes, std::string_view key,
                         TimePoint now);
  // A message whose subject does not start with key.strip_prefix: terminated.
  void unroutable(const MessageBytes& bytes, std::uint64_t stream_seq) const;
  // `messages` held messages kept alive at the server (+WPI), at debug level.
  static void kept_alive(std::size_t messages);

  // The durable was deleted under jetfan.
  void consumer_deleted() const;
  // A drain began: `in_flight` may finish, `handed_back` go back now, redelivered after `handback`.
  void draining(std::size_t in_flight, std::size_t handed_back, Duration handback) const;
  static void drain_timed_out(std::size_t in_flight);
  static void stopped(const CoreCounters& counters);

  // `"<handler>" (<peer>)`.
  static std::string describe(const HandlerSession& session);

 private:
  const Config& config_;
  RateLimitedLog& warnings_;
};

}  // namespace jetfan
