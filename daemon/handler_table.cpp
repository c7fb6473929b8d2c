#include "handler_table.hpp"

#include <algorithm>

namespace jetfan {

HandlerTable::HandlerTable(std::size_t handlers, ConnectionLimits limits) : limits_(limits), instances_(handlers, 0) {}

void HandlerTable::add(const std::shared_ptr<HandlerSession>& session) {
  sessions_.emplace(session->id(), session);
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
          found->second->fail("evicted: " + std::to_string(limits_.max_unidentified) +
                              " newer connections have not said HELLO either (socket.max_unidentified)");
          break;
        }
      }
      break;
    case ConnectionVerdict::kRefuse:
      session->fail("jetfan has its " + std::to_string(limits_.max_connections) +
                    " connections already (socket.max_connections)");
      return;
  }
  unidentified_.insert(session->id());
  unidentified_order_.push_back(session->id());
}

void HandlerTable::admitted(HandlerSession& session, std::size_t handler, std::int64_t unix_ms) {
  auto& io = socket_io_[session.handler_name()];
  if (!io) io = std::make_shared<SocketIo>();
  session.count_io_into(io);
  forget_unidentified(session.id());
  ++instances_.at(handler);
  admitted_unix_ms_[session.id()] = unix_ms;
}

bool HandlerTable::closed(const HandlerSession& session) {
  const auto entry = sessions_.find(session.id());
  if (entry == sessions_.end()) return false;
  forget_unidentified(session.id());
  const bool instance = session.handler().has_value();
  if (instance) --instances_.at(*session.handler());
  admitted_unix_ms_.erase(session.id());
  sessions_.erase(entry);
  return instance;
}

void HandlerTable::close_all() {
  auto sessions = std::move(sessions_);
  sessions_.clear();
  unidentified_.clear();
  unidentified_order_.clear();
  admitted_unix_ms_.clear();
  std::fill(instances_.begin(), instances_.end(), 0);
  for (auto& [id, session] : sessions) session->close();
}

void HandlerTable::forget_unidentified(ConnectionId connection) {
  unidentified_.erase(connection);
  while (!unidentified_order_.empty() && !unidentified_.count(unidentified_order_.front())) {
    unidentified_order_.pop_front();
  }
}

HandlerSession* HandlerTable::find(ConnectionId connection) const {
  const auto found = sessions_.find(connection);
  return found == sessions_.end() ? nullptr : found->second.get();
}

std::size_t HandlerTable::connected() const {
  std::size_t count = 0;
  for (const std::size_t n : instances_) count += n;
  return count;
}

std::size_t HandlerTable::without_instance() const {
  return static_cast<std::size_t>(std::count(instances_.begin(), instances_.end(), 0));
}

std::vector<InstanceView> HandlerTable::instance_views(std::size_t handler, std::int64_t now_unix_ms) const {
  std::vector<InstanceView> views;
  for (const auto& [id, session] : sessions_) {
    if (session->handler() != handler) continue;
    const auto admitted = admitted_unix_ms_.find(id);
    const std::int64_t since = admitted == admitted_unix_ms_.end() ? now_unix_ms : admitted->second;
    views.push_back(InstanceView{id, session->credentials().pid, session->credentials().uid, since,
                                 static_cast<double>(now_unix_ms - since) / 1000});
  }
  std::sort(views.begin(), views.end(), [](const auto& a, const auto& b) { return a.connection < b.connection; });
  return views;
}

const SocketIo* HandlerTable::socket_io(const std::string& handler) const {
  const auto found = socket_io_.find(handler);
  return found == socket_io_.end() ? nullptr : found->second.get();
}

std::vector<std::shared_ptr<HandlerSession>> HandlerTable::reindex(
    const std::vector<std::optional<std::size_t>>& old_to_new, std::size_t handlers,
    std::vector<std::size_t>& dismissed_per_old) {
  std::vector<std::shared_ptr<HandlerSession>> dismissed;
  dismissed_per_old.assign(instances_.size(), 0);
  for (const auto& [id, session] : sessions_) {
    if (!session->handler()) continue;
    const std::size_t old = *session->handler();
    session->reassign(old_to_new.at(old));
    if (!old_to_new[old]) {
      dismissed.push_back(session);
      ++dismissed_per_old[old];
    }
  }
  std::vector<std::size_t> instances(handlers, 0);
  for (std::size_t old = 0; old < old_to_new.size(); ++old) {
    if (old_to_new[old]) instances.at(*old_to_new[old]) = instances_[old];
  }
  instances_ = std::move(instances);
  return dismissed;
}

}  // namespace jetfan
