#include "dispatch_log.hpp"

#include "descriptors.hpp"
#include "format.hpp"
#include "logging.hpp"
#include "retry_budget.hpp"

namespace jetfan {

void DispatchLog::unrestricted_handlers() const {
  for (const auto& handler : config_.handlers) {
    if (!handler.allow.empty()) continue;
    log_info("handler.unrestricted", {{"handler", handler.name}, {"socket", config_.socket.path}},
             "handler \"{}\" has no allow list: any process that can open {} may be it", handler.name,
             config_.socket.path);
  }
}

void DispatchLog::connections_limited(std::size_t max_connections, std::size_t room) const {
  log_warn("socket.connections_limited", {{"max_connections", max_connections}, {"room", room}},
           "socket.max_connections is {}, but the file descriptor limit leaves room for {} handler "
           "connections; serving at most {} (raise LimitNOFILE= to allow more)",
           max_connections, room, room);
}

void DispatchLog::descriptor_plan(const DescriptorPlan& plan) const {
  log_info("descriptors.plan",
           {{"limit", plan.limit},
            {"open", plan.open},
            {"handlers", plan.handlers},
            {"metrics", plan.metrics},
            {"control", plan.control},
            {"reserved", plan.reserved}},
           "file descriptors: limit {}, {} open; up to {} for handler connections, {} for metrics, {} for control, "
           "{} kept free for NATS and jetfan's own files",
           plan.limit, plan.open, plan.handlers, plan.metrics, plan.control, plan.reserved);
}

void DispatchLog::refused(const HandlerSession& session, std::string_view handler, const std::string& detail) const {
  log_warn("handler.refused",
           {{"handler", handler},
            {"connection", session.id()},
            {"pid", session.credentials().pid},
            {"uid", session.credentials().uid},
            {"reason", detail}},
           "refused HELLO from {}: {}", session.peer(), detail);
}

void DispatchLog::connected(const HandlerSession& session) const {
  log_info("handler.connected",
           {{"handler", session.handler_name()},
            {"connection", session.id()},
            {"pid", session.credentials().pid},
            {"uid", session.credentials().uid}},
           "handler {} connected", describe(session));
}

void DispatchLog::disconnected(const HandlerSession& session) const {
  log_info("handler.disconnected",
           {{"handler", session.handler_name()},
            {"connection", session.id()},
            {"pid", session.credentials().pid},
            {"uid", session.credentials().uid}},
           "handler {} disconnected; what it had unconfirmed will be redelivered", describe(session));
}

void DispatchLog::failing(const HandlerSession& session, const std::string& why, TimePoint now) {
  const std::string who = session.handler() ? "handler \"" + session.handler_name() + "\"" : "a peer";
  warnings_.warn(now, who + " disconnected: " + why, "handler.failed",
                 {{"handler", session.handler_name()},
                  {"connection", session.id()},
                  {"pid", session.credentials().pid},
                  {"uid", session.credentials().uid},
                  {"reason", why}},
                 "{} ({}) disconnected: {}. What it had unconfirmed will be redelivered.", who, session.peer(), why);
}

void DispatchLog::terminated(const HandlerSession& session, std::uint64_t delivery, const std::string& reason) const {
  const std::string said = reason.empty() ? "(no reason given)" : reason;
  log_warn("delivery.terminated",
           {{"handler", session.handler_name()},
            {"connection", session.id()},
            {"pid", session.credentials().pid},
            {"uid", session.credentials().uid},
            {"delivery", delivery},
            {"reason", said}},
           "handler {} terminated delivery {} as poison: {}", describe(session), delivery, said);
}

void DispatchLog::nakked(const HandlerSession& session, std::uint64_t delivery, const std::string& reason) const {
  log_debug("delivery.nakked",
            {{"handler", session.handler_name()},
             {"connection", session.id()},
             {"pid", session.credentials().pid},
             {"delivery", delivery},
             {"reason", reason}},
            "handler {} nak'd delivery {}: {}", describe(session), delivery, reason);
}

void DispatchLog::unknown_answer(const HandlerSession& session, proto::Verb verb, std::uint64_t delivery) const {
  log_debug("answer.unknown",
            {{"handler", session.handler_name()},
             {"connection", session.id()},
             {"pid", session.credentials().pid},
             {"delivery", delivery}},
            "handler {}: {} {} names no delivery in flight on this connection (late, after a timeout?); ignored",
            describe(session), proto::to_string(verb), delivery);
}

void DispatchLog::failed(const Effect& effect, const HeldMessage& stored, const HandlerSession* session, bool ordered,
                         std::string_view reason, TimePoint now) {
  const std::string name = session ? session->handler_name() : "?";
  const std::string who = session ? describe(*session) : "(connection " + std::to_string(effect.connection) + ")";
  const PeerCredentials none;
  const PeerCredentials& peer = session ? session->credentials() : none;
  std::string cause = to_string(effect.cause);
  if (!reason.empty()) cause += ": \"" + std::string(reason) + "\"";
  // A NAK that named its delay is redelivered after it; every other failure after a growing one.
  const std::string after =
      effect.cause == FailCause::kNak && effect.delay >= Duration(0)
          ? "the handler's delay of " + format::duration(std::chrono::duration<double>(effect.delay).count())
          : std::string("a growing delay");
  warnings_.warn(now, "failed deliveries to handler \"" + name + "\": " + to_string(effect.cause), "delivery.failed",
                 {{"handler", name},
                  {"connection", effect.connection},
                  {"pid", peer.pid},
                  {"uid", peer.uid},
                  {"delivery", effect.delivery},
                  {"seq", stored.stream_seq},
                  {"key", stored.key},
                  {"subject", stored.message->subject()},
                  {"deliveries", stored.deliveries},
                  {"reason", to_string(effect.cause)},
                  {"said", reason}},
                 "handler {}: delivery {} of stream seq {} (subject \"{}\") failed: {}. {}", who, effect.delivery,
                 stored.stream_seq, stored.message->subject(), cause,
                 stored.message->reply().empty()
                     ? "It is a redriven dead letter: jetfan gives it to the handler again after its backoff, "
                       "until its retry budget is used up (then it is dead-lettered anew)."
                 : ordered
                     ? "The handler is ordered: jetfan keeps the message and gives it to the handler again after " +
                           after + ", before any later message of its order key."
                     : "It goes back to the server for redelivery to this handler (NAK after " + after +
                           ") once no other handler has it in flight.");
}

void DispatchLog::gave_up(const Effect& effect, const HeldMessage& stored, TimePoint now) {
  const std::string& name = config_.handlers.at(effect.handler).name;
  warnings_.warn(now, "handler \"" + name + "\" used up its retry budget (no dead_letter: TERM)", "retry.used_up",
                 {{"handler", name}, {"seq", stored.stream_seq}, {"reason", jetfan::describe(effect.reason)}},
                 "handler \"{}\": stream seq {} (subject \"{}\"): {}. It has no dead_letter subject, so this is a TERM "
                 "for it: it gets the message no more, and the server is told +TERM once every other handler settled.",
                 name, stored.stream_seq, stored.message->subject(), jetfan::describe(effect.reason));
}

void DispatchLog::without_order_key(std::size_t handler, std::uint64_t stream_seq, const MessageBytes& bytes,
                                    std::string_view key, TimePoint now) {
  const auto& config = config_.handlers.at(handler);
  warnings_.warn(now, "messages without an order key for handler \"" + config.name + "\"", "delivery.without_order_key",
                 {{"handler", config.name}, {"seq", stream_seq}, {"key", key}},
                 "handler \"{}\" is ordered by {}, but stream seq {} (subject \"{}\") has no such {}: it goes to the "
                 "handler unordered (counted as without_order_key)",
                 config.name, to_string(config.order_by), stream_seq, bytes.subject(),
                 config.order_by.kind == OrderBy::Kind::kHeader ? "header" : "token");
}

void DispatchLog::unroutable(const MessageBytes& bytes, std::uint64_t stream_seq) const {
  log_error("message.unroutable", {{"subject", bytes.subject()}, {"seq", stream_seq}, {"reason", "no key"}},
            "message on subject \"{}\" (stream seq {}) has no key: it does not start with key.strip_prefix "
            "\"{}\". Terminated it (+TERM): no handler can be chosen for it, so redelivering it would loop.",
            bytes.subject(), stream_seq ? std::to_string(stream_seq) : "?", config_.key.strip_prefix);
}

void DispatchLog::kept_alive(std::size_t messages) {
  log_debug("held.kept_alive", {{"messages", messages}}, "kept {} held message(s) alive at the server (+WPI)",
            messages);
}

void DispatchLog::consumer_deleted() const {
  log_error("nats.consumer_deleted", {{"stream", config_.consumer.stream}, {"consumer", config_.consumer.durable}},
            "nats: consumer \"{}\" of stream \"{}\" was deleted; jetfan keeps pulling in case its controller "
            "makes it anew, and forgets what it remembered of the old one's sequences",
            config_.consumer.durable, config_.consumer.stream);
}

void DispatchLog::draining(std::size_t in_flight, std::size_t handed_back, Duration handback) const {
  log_info("draining",
           {{"in_flight", in_flight},
            {"drain_timeout_ms", config_.delivery.drain_timeout.count()},
            {"handed_back", handed_back},
            {"redelivered_in_ms", handback.count()}},
           "draining: {} deliveries in flight may finish within {}ms; {} other held message(s) handed back now, "
           "redelivered in {}ms (once jetfan's pull requests at the server have expired)",
           in_flight, config_.delivery.drain_timeout.count(), handed_back, handback.count());
}

void DispatchLog::drain_timed_out(std::size_t in_flight) {
  log_warn("drain.timed_out", {{"in_flight", in_flight}},
           "drain_timeout reached with {} deliveries still in flight; handing them back", in_flight);
}

void DispatchLog::stopped(const CoreCounters& c) {
  log_info("stopped",
           {{"arrived", c.arrived},
            {"acked", c.acked},
            {"nakked", c.nakked},
            {"terminated", c.terminated},
            {"no_recipient", c.no_recipient},
            {"unroutable", c.unroutable},
            {"deliveries", c.deliveries}},
           "stopped: {} messages arrived, {} acked, {} nak'd, {} terminated, {} with no recipient, {} unroutable; "
           "{} deliveries to handlers",
           c.arrived, c.acked, c.nakked, c.terminated, c.no_recipient, c.unroutable, c.deliveries);
}

std::string DispatchLog::describe(const HandlerSession& session) {
  return "\"" + session.handler_name() + "\" (" + session.peer() + ")";
}

}  // namespace jetfan
