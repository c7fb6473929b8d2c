// DispatchCore and its OrderGate (order_gate.hpp), RetryQueue (retry_queue.hpp) and OrderAway
// (order_away.hpp): ordered delivery per key (docs/dispatch-rules.md R21-R25). What each ordered
// handler owes per key is OrderGate's; when a failed delivery goes again inside the core is
// RetryQueue's; how long a key waits for a message handed back for room is OrderAway's. Kept apart
// from the message path in dispatch_core.cpp, which calls in at arrival, dispatch, the end of a
// delivery, the decision to hand back, and tick().

#include <cassert>

#include "dispatch_core.hpp"

namespace jetfan {

void DispatchCore::order_arrived(const Arrival& arrival, Message& message, TimePoint now) {
  if (arrival.order.empty() && gate_.entries() == 0) return;  // the path of every unordered message
  const std::uint64_t seq = arrival.stream_seq;
  away_.back(seq);
  const HandlerMask owed = message.recipients & ~message.settled;
  for (const OrderKey& order : arrival.order) {
    const HandlerMask bit = HandlerMask{1} << order.handler;
    if (order.handler >= handlers_.size() || !(owed & bit)) continue;
    gate_.add(order.handler, order.key, seq);
    message.ordered |= bit;
  }
  // Back from the server after a hand-back: it keeps the key it had, even if the handler's order_by
  // changed meanwhile, so the messages waiting for it are not left waiting in vain.
  // One no longer a recipient (its patterns changed) lets the rest of the key go.
  for (std::size_t h = 0; h < handlers_.size(); ++h) {
    const HandlerMask bit = HandlerMask{1} << h;
    if (!gate_.contains(h, seq)) continue;
    if (owed & bit) {
      message.ordered |= bit;
    } else if (const auto next = gate_.settle(h, seq)) {
      order_release(h, *next);
      dispatch(h, now);
    }
  }
}

bool DispatchCore::order_admits(std::size_t handler, std::uint64_t seq, Message& message) {
  const HandlerMask bit = HandlerMask{1} << handler;
  if (!(message.ordered & bit) || (gate_.may_deliver(handler, seq) && !restart_holds_all() && !gap_holds(seq)))
    return true;
  message.queued &= ~bit;
  message.gated |= bit;
  return false;
}

void DispatchCore::order_delivered(std::size_t handler, std::uint64_t seq, const Message& message) {
  if (message.ordered & (HandlerMask{1} << handler)) gate_.started(handler, seq);
}

void DispatchCore::order_ended(std::size_t handler, std::uint64_t seq, const Message& message, bool settled) {
  if (!(message.ordered & (HandlerMask{1} << handler))) return;
  if (!settled) {
    // An older one of the key may have come back while this one was out: it goes first now.
    if (const auto older = gate_.stopped(handler, seq)) order_release(handler, *older);
    return;
  }
  if (const auto next = gate_.settle(handler, seq)) order_release(handler, *next);
}

void DispatchCore::order_release(std::size_t handler, std::uint64_t seq) {
  auto found = messages_.find(seq);
  if (found == messages_.end()) return;  // at the server: it comes back, or its hold runs out
  Message& message = found->second;
  const HandlerMask bit = HandlerMask{1} << handler;
  if (!(message.gated & bit)) return;  // queued already, in its retry's delay, or settled
  message.gated &= ~bit;
  message.queued |= bit;
  handlers_[handler].queue.push_front(seq);  // it has waited longer than anything queued behind it
  Effect released{Effect::Kind::kOrderReleased, message.handle};
  released.handler = handler;
  effects_.push_back(released);
}

void DispatchCore::release_gated(std::vector<bool>& touched) {
  if (restart_holds_all()) return;
  for (auto& [seq, message] : messages_) {
    if (message.gated == 0 || gap_holds(seq)) continue;
    for (std::size_t h = 0; h < handlers_.size(); ++h) {
      const HandlerMask bit = HandlerMask{1} << h;
      if (!(message.gated & bit) || !gate_.may_deliver(h, seq)) continue;
      order_release(h, seq);
      if (h < touched.size()) touched[h] = true;
    }
  }
}

bool DispatchCore::order_holds(std::uint64_t seq, Message& message, TimePoint now) {
  if ((message.ordered & ~message.settled) == 0) return false;
  const HandlerMask fresh = message.failed & ~message.retrying;
  if (fresh == 0) return true;
  // Every recipient that failed goes again after the delay, the ordered ones before any later
  // message of their key (the gate keeps their place); the others with them, since the message
  // stays held anyway.
  for (std::size_t h = 0; h < handlers_.size(); ++h) {
    const HandlerMask bit = HandlerMask{1} << h;
    if (!(fresh & bit)) continue;
    message.retrying |= bit;
    retries_.schedule(now + message.nak_delay, h, seq);
  }
  return true;
}

void DispatchCore::order_handed_back(std::uint64_t seq, const Message& message, Duration delay, bool last_delivery,
                                     TimePoint now) {
  if (draining_ || (message.ordered & ~message.settled) == 0) return;
  if (standing_by_) {
    // The pinned reader gets it and keeps its order; should the pin come back, what this reader then
    // waits for is read anew (expect_outstanding). Kept in the gate, it would block its key for good.
    for (const auto& [handler, next] : gate_.forget(seq)) order_release(handler, next);
    return;
  }
  if (!last_delivery && to_server()) {
    away_.away(seq, delay, now);
    return;
  }
  // The server will not deliver it again (MaxDeliver, or AckPolicy none): waiting for it would
  // block its keys for good.
  ++counters_.order_gave_up;
  for (const auto& [handler, next] : gate_.forget(seq)) order_release(handler, next);
}

void DispatchCore::order_tick(TimePoint now) {
  if (restart_ && restart_->until() <= now) {
    counters_.order_gave_up += restart_->still_away().size();
    restart_end(now);
  }
  std::vector<std::size_t> touched;
  for (const auto [handler, seq] : retries_.take_due(now)) {
    auto found = messages_.find(seq);
    if (found == messages_.end()) continue;
    Message& message = found->second;
    const HandlerMask bit = HandlerMask{1} << handler;
    if (!(message.retrying & bit)) continue;
    message.retrying &= ~bit;
    message.failed &= ~bit;
    if (message.settled & bit) continue;
    ++message.retries;
    ++counters_.order_retries;
    message.queued |= bit;
    handlers_[handler].queue.push_front(seq);
    touched.push_back(handler);
  }
  for (const std::uint64_t seq : away_.take_expired(now)) {
    ++counters_.order_gave_up;
    for (const auto& [handler, next] : gate_.forget(seq)) {
      order_release(handler, next);
      touched.push_back(handler);
    }
  }
  for (const std::size_t handler : touched) {
    if (handler < handlers_.size()) dispatch(handler, now);
  }
}

std::optional<TimePoint> DispatchCore::order_next_wakeup() const {
  std::optional<TimePoint> wake = retries_.next();
  if (restart_ && (!wake || restart_->until() < *wake)) wake = restart_->until();
  if (const auto away = away_.next(); away && (!wake || *away < *wake)) wake = away;
  return wake;
}

void DispatchCore::order_reindex(const HandlerReindex& reindex, const HandlerRenumbering& renumbering) {
  for (auto& [seq, message] : messages_) {
    message.ordered = renumbering.mask(message.ordered);
    message.gated = renumbering.mask(message.gated);
    message.retrying = renumbering.mask(message.retrying);
  }
  retries_.reindex(reindex.old_to_new);
  gate_.reindex(reindex.old_to_new, reindex.handlers.size());
}

std::vector<OrderWait> DispatchCore::order_waits() const {
  std::vector<OrderWait> waits(handlers_.size());
  for (std::size_t h = 0; h < handlers_.size(); ++h) waits[h].load = gate_.load(h);
  for (const auto& [seq, message] : messages_) {
    if (message.gated == 0) continue;
    for (std::size_t h = 0; h < handlers_.size(); ++h) {
      if (!(message.gated & (HandlerMask{1} << h))) continue;
      OrderWait& wait = waits[h];
      if (wait.oldest && *wait.oldest <= message.arrived) continue;
      wait.oldest = message.arrived;
      wait.key = gate_.key_of(h, seq).value_or("");
      wait.waits_for = gate_.oldest_owed(h, seq).value_or(0);
    }
  }
  return waits;
}

}  // namespace jetfan
