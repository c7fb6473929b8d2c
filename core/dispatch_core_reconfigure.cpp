// DispatchCore and its HandlerRenumbering (handler_renumbering.hpp): taking a new handler table, a
// reload (docs/dispatch-rules.md R36, R37). HandlerRenumbering moves every mask of handlers to the
// new indices; here the core applies it to what it holds (messages, connections, queues, the
// confirmations remembered, its parts' own tables) and settles what only removed handlers owed.
// Kept apart from the message path in dispatch_core.cpp: a reload is rare and walks everything.

#include <algorithm>
#include <cassert>

#include "dispatch_core.hpp"

namespace jetfan {

ReindexOutcome DispatchCore::reconfigure(const HandlerReindex& reindex, TimePoint now) {
  assert(!draining_);
  assert(reindex.old_to_new.size() == handlers_.size());
  assert(reindex.handlers.size() <= kMaxHandlers);
  const auto& old_to_new = reindex.old_to_new;
  const HandlerRenumbering renumbering(old_to_new);
  const HandlerMask removed = renumbering.removed();
  ReindexOutcome outcome;
  outcome.released.assign(handlers_.size(), 0);

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
  order_reindex(reindex, renumbering);

  for (auto& [seq, message] : messages_) {
    const HandlerMask owed_by_removed = message.recipients & ~message.settled & removed;
    for (std::size_t h = 0; h < old_to_new.size(); ++h) {
      if (owed_by_removed & (HandlerMask{1} << h)) ++outcome.released[h];
    }
    if (message.termed & removed) message.poison = true;
    // A removed handler's failure in this delivery goes with it: it no longer owes the message.
    message.recipients = renumbering.mask(message.recipients);
    message.settled = renumbering.mask(message.settled);
    message.termed = renumbering.mask(message.termed);
    message.failed = renumbering.mask(message.failed);
    message.queued = renumbering.mask(message.queued);
    message.in_flight = renumbering.mask(message.in_flight);
  }
  budget_.reindex(old_to_new);
  for (auto& [seq, known] : confirmations_) {
    if (known.termed & removed) known.poison = true;
    known.settled = renumbering.mask(known.settled);
    known.termed = renumbering.mask(known.termed);
  }

  std::vector<Handler> handlers(reindex.handlers.size());
  for (std::size_t h = 0; h < handlers.size(); ++h) {
    handlers[h].limits = reindex.handlers[h];
    handlers[h].rate = bucket_for(reindex.handlers[h]);
  }
  for (std::size_t h = 0; h < handlers_.size(); ++h) {
    if (!old_to_new[h]) continue;
    Handler& moved = handlers[*old_to_new[h]];
    moved.connections = std::move(handlers_[h].connections);
    moved.stats = handlers_[h].stats;
    // A reload does not give it a new burst unless its max_rate changed (R48).
    if (moved.limits.max_rate == handlers_[h].limits.max_rate) moved.rate = handlers_[h].rate;
    // Nor new in-flight limits unless their bounds changed (R49).
    const HandlerLimits& was = handlers_[h].limits;
    if (moved.limits.max_inflight != was.max_inflight || moved.limits.adaptive_inflight != was.adaptive_inflight ||
        moved.limits.min_inflight != was.min_inflight) {
      for (const ConnectionId id : moved.connections) connections_.at(id).limit = limit_for(moved.limits);
    }
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

}  // namespace jetfan
