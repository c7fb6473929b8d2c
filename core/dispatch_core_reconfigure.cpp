// DispatchCore, continued: taking a new handler table (a reload), and the figures it reports about
// handlers. Kept apart from the message path in dispatch_core.cpp; the rules are in the header.

#include <algorithm>
#include <cassert>

#include "dispatch_core.hpp"

namespace jetfan {
namespace {

// The bits of `mask` moved to their new indices; bits of removed handlers are dropped.
HandlerMask reindex_mask(HandlerMask mask, const std::vector<std::optional<std::size_t>>& old_to_new) {
  HandlerMask out = 0;
  for (std::size_t h = 0; h < old_to_new.size(); ++h) {
    if ((mask & (HandlerMask{1} << h)) && old_to_new[h]) out |= HandlerMask{1} << *old_to_new[h];
  }
  return out;
}

}  // namespace

ReindexOutcome DispatchCore::reconfigure(const HandlerReindex& reindex, TimePoint now) {
  assert(!draining_);
  assert(reindex.old_to_new.size() == handlers_.size());
  assert(reindex.handlers.size() <= kMaxHandlers);
  const auto& old_to_new = reindex.old_to_new;
  ReindexOutcome outcome;
  outcome.released.assign(handlers_.size(), 0);
  HandlerMask removed = 0;
  for (std::size_t h = 0; h < old_to_new.size(); ++h) {
    if (!old_to_new[h]) removed |= HandlerMask{1} << h;
  }

  // A removed handler's deliveries in flight count as confirmed; its connections are forgotten
  // (the caller closes them), so a later disconnect() of them changes nothing.
  for (auto it = connections_.begin(); it != connections_.end();) {
    const std::size_t handler = it->second.handler;
    if (old_to_new[handler]) {
      it->second.handler = *old_to_new[handler];
      ++it;
      continue;
    }
    for (const auto& [delivery, flight] : it->second.flights) {
      auto message = messages_.find(flight.stream_seq);
      if (message != messages_.end()) message->second.in_flight &= ~(HandlerMask{1} << handler);
    }
    outcome.dropped.push_back(it->first);
    it = connections_.erase(it);
  }
  order_reindex(reindex);

  for (auto& [seq, message] : messages_) {
    const HandlerMask owed_by_removed = message.recipients & ~message.settled & removed;
    for (std::size_t h = 0; h < old_to_new.size(); ++h) {
      if (owed_by_removed & (HandlerMask{1} << h)) ++outcome.released[h];
    }
    if (message.termed & removed) message.poison = true;
    // A removed handler's failure in this delivery goes with it: it no longer owes the message.
    message.recipients = reindex_mask(message.recipients, old_to_new);
    message.settled = reindex_mask(message.settled, old_to_new);
    message.termed = reindex_mask(message.termed, old_to_new);
    message.failed = reindex_mask(message.failed, old_to_new);
    message.queued = reindex_mask(message.queued, old_to_new);
    message.in_flight = reindex_mask(message.in_flight, old_to_new);
  }
  budget_.reindex(old_to_new);
  for (auto& [seq, known] : confirmations_) {
    if (known.termed & removed) known.poison = true;
    known.settled = reindex_mask(known.settled, old_to_new);
    known.termed = reindex_mask(known.termed, old_to_new);
  }

  std::vector<Handler> handlers(reindex.handlers.size());
  for (std::size_t h = 0; h < handlers.size(); ++h) handlers[h].limits = reindex.handlers[h];
  for (std::size_t h = 0; h < handlers_.size(); ++h) {
    if (!old_to_new[h]) continue;
    Handler& moved = handlers[*old_to_new[h]];
    moved.connections = std::move(handlers_[h].connections);
    moved.stats = handlers_[h].stats;
  }
  // Queues again, in stream order, from the queued bits.
  std::vector<std::uint64_t> order;
  order.reserve(messages_.size());
  for (const auto& [seq, message] : messages_) order.push_back(seq);
  std::sort(order.begin(), order.end());
  for (const std::uint64_t seq : order) {
    const HandlerMask queued = messages_.at(seq).queued;
    for (std::size_t h = 0; h < handlers.size(); ++h) {
      if (queued & (HandlerMask{1} << h)) handlers[h].queue.push_back(seq);
    }
  }
  handlers_ = std::move(handlers);
  settings_.handlers = reindex.handlers;
  settings_.nak_delay = reindex.nak_delay;
  settings_.nak_delay_max = reindex.nak_delay_max;

  // What the removed handlers alone still owed is settled now, or handed back if another failed.
  for (const std::uint64_t seq : order) maybe_finish(seq, now);
  for (std::size_t h = 0; h < handlers_.size(); ++h) dispatch(h, now);
  return outcome;
}

std::vector<HandlerLoad> DispatchCore::loads() const {
  std::vector<HandlerLoad> loads(handlers_.size());
  for (std::size_t h = 0; h < handlers_.size(); ++h) {
    loads[h].connections = handlers_[h].connections.size();
    for (const ConnectionId id : handlers_[h].connections) loads[h].in_flight += connections_.at(id).flights.size();
  }
  for (const auto& [seq, message] : messages_) {
    const HandlerMask owed = message.recipients & ~message.settled;
    for (std::size_t h = 0; h < handlers_.size(); ++h) {
      const HandlerMask bit = HandlerMask{1} << h;
      if (!(owed & bit)) continue;
      ++loads[h].owed;
      if (message.queued & bit) ++loads[h].queued;
      auto& oldest = loads[h].oldest_unconfirmed;
      if (!oldest || message.arrived < *oldest) oldest = message.arrived;
    }
  }
  return loads;
}

std::optional<TimePoint> DispatchCore::oldest_held() const {
  std::optional<TimePoint> oldest;
  for (const auto& [seq, message] : messages_) {
    if (!oldest || message.arrived < *oldest) oldest = message.arrived;
  }
  return oldest;
}

}  // namespace jetfan
