#pragma once
// HandlerTable: the connections on the handler socket, as the dispatcher keeps books of them. Every
// session by connection id; those that have not said HELLO yet, in the order they came (the oldest
// is evicted first, core/admission.hpp); the connected instances of each declared handler; when
// each instance was admitted; and what the sockets of each handler did (SocketIo, by name, across
// reloads and instances). The dispatcher decides what a connection may do; this table only keeps
// those facts true, as Asio's connection_manager keeps its set.
//
// Memory: one entry per open connection, plus the unidentified ones' arrival order, whose entries
// of connections since admitted or gone are dropped from its front (the front is at most
// hello_timeout old, so few are kept behind it).
//
// Thread: the io_context thread only. Ownership: the table holds a shared_ptr to each session until
// closed() (or close_all()); a session refers to its owner, so the table must be emptied before the
// owner goes.

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "admission.hpp"
#include "handler_session.hpp"
#include "status_snapshot.hpp"

namespace jetfan {

class HandlerTable {
 public:
  // `handlers`: how many are declared. Precondition: limits' numbers > 0.
  HandlerTable(std::size_t handlers, ConnectionLimits limits);

  // A new connection: it is kept and started, unidentified, unless the connection limits say no, when
  // it is failed with the reason (it stays until it is closed, like any other). When only a place
  // among the unidentified is lacking, the oldest unidentified connection is failed instead.
  void add(const std::shared_ptr<HandlerSession>& session);
  // It was admitted as an instance of `handler` (session.admit() done): counted, and its socket's
  // I/O counted under the handler's name from now on.
  void admitted(HandlerSession& session, std::size_t handler, std::int64_t unix_ms);
  // It is gone: forgotten. True when it was an admitted instance, now no longer counted.
  bool closed(const HandlerSession& session);
  // Closes every session at once (each is forgotten first: their on_closed finds nothing).
  void close_all();

  // nullptr when there is no such connection.
  HandlerSession* find(ConnectionId connection) const;
  std::size_t size() const { return sessions_.size(); }

  // Connected instances per declared handler, by index.
  std::span<const std::size_t> instances() const { return instances_; }
  std::size_t instances(std::size_t handler) const { return instances_.at(handler); }
  std::size_t connected() const;         // instances of every handler
  std::size_t without_instance() const;  // declared handlers with none
  // Its admitted instances, oldest connection first, for status.
  std::vector<InstanceView> instance_views(std::size_t handler, std::int64_t now_unix_ms) const;
  // What the sockets of the handler named so did; nullptr before its first instance.
  const SocketIo* socket_io(const std::string& handler) const;

  // A reload gave the handlers new indices (old_to_new[i]: the new index of the handler at i, or
  // nullopt when it was removed; `handlers` of them now). Instances move with their handler; those
  // of removed handlers are no instances any more and are returned, to be dismissed, and counted per
  // old index in `dismissed_per_old`.
  std::vector<std::shared_ptr<HandlerSession>> reindex(const std::vector<std::optional<std::size_t>>& old_to_new,
                                                       std::size_t handlers,
                                                       std::vector<std::size_t>& dismissed_per_old);

  const ConnectionLimits& limits() const { return limits_; }
  // Fewer connections than configured (the descriptor limit leaves no room for more).
  void limit_connections(std::size_t max_connections) { limits_.max_connections = max_connections; }

 private:
  void forget_unidentified(ConnectionId connection);

  ConnectionLimits limits_;
  std::unordered_map<ConnectionId, std::shared_ptr<HandlerSession>> sessions_;
  std::unordered_set<ConnectionId> unidentified_;
  std::deque<ConnectionId> unidentified_order_;
  std::vector<std::size_t> instances_;
  std::unordered_map<ConnectionId, std::int64_t> admitted_unix_ms_;
  std::map<std::string, std::shared_ptr<SocketIo>> socket_io_;
};

}  // namespace jetfan
