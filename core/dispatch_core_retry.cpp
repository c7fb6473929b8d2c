// DispatchCore and its RetryBudget (retry_budget.hpp): the per-handler retry policy (RetryPolicy)
// and dead letters (docs/dispatch-rules.md R9-R12). The bookkeeping is RetryBudget's; here is what
// the core does with it.

#include <cassert>

#include "dispatch_core.hpp"

namespace jetfan {

void DispatchCore::failed_attempt(std::uint64_t seq, Message& message, std::size_t handler, FailCause cause,
                                  std::optional<Duration> delay, TimePoint /*now*/) {
  const RetryPolicy& policy = handlers_[handler].limits.retry;
  const std::uint32_t attempts = budget_.count_failure(seq, handler, cause, message.deliveries);
  if (policy.max_attempts == 0 || attempts < policy.max_attempts) {
    // A handler's own backoff counts its own failures, not the deliveries others' failures caused.
    if (!delay && policy.backoff > Duration(0)) {
      delay = RetryBudget::delay(attempts, policy.backoff, std::max(policy.backoff_max, policy.backoff));
    }
    fail(message, handler, delay);
    return;
  }
  give_up(seq, message, handler, GiveUpReason{false, attempts, policy.max_attempts, cause});
}

bool DispatchCore::dead_letter_term(std::uint64_t seq, Message& message, std::size_t handler) {
  const RetryPolicy& policy = handlers_[handler].limits.retry;
  if (!policy.dead_letter) return false;
  give_up(seq, message, handler,
          GiveUpReason{true, budget_.attempts(seq, handler), policy.max_attempts, FailCause::kNak});
  return true;
}

void DispatchCore::give_up(std::uint64_t seq, Message& message, std::size_t handler, const GiveUpReason& reason) {
  const HandlerMask bit = HandlerMask{1} << handler;
  HandlerStats& stats = handlers_[handler].stats;
  Effect effect{Effect::Kind::kGaveUp, message.handle};
  effect.handler = handler;
  effect.reason = reason;
  if (!handlers_[handler].limits.retry.dead_letter) {
    // As if it had said TERM: redelivering it could only fail again.
    message.settled |= bit;
    message.termed |= bit;
    ++stats.gave_up;
    ++counters_.gave_up;
    stats.attempts.observe(reason.attempts);
    effects_.push_back(effect);
    return;
  }
  // Held for it, neither queued nor failed, until the dead letter is stored.
  effect.kind = Effect::Kind::kDeadLetter;
  effect.publish = budget_.begin_publish(seq, handler, reason);
  effects_.push_back(effect);
}

bool DispatchCore::dead_letter_stored(std::uint64_t publish, TimePoint now) {
  const auto published = budget_.stored(publish);
  if (!published) return false;
  auto found = messages_.find(published->seq);
  assert(found != messages_.end());  // a message being dead-lettered stays held (maybe_finish)
  if (found == messages_.end()) return false;
  const std::size_t handler = published->handler;
  found->second.settled |= HandlerMask{1} << handler;
  HandlerStats& stats = handlers_[handler].stats;
  ++(published->reason.termed ? stats.dead_lettered_term : stats.dead_lettered_used_up);
  stats.attempts.observe(std::max<std::uint32_t>(published->reason.attempts, 1));
  ++counters_.dead_lettered;
  if (is_redrive(published->seq)) redrives_.dead_lettered(published->seq);
  // Settled for it now: the next message of its order key, if it waits, may go to it.
  order_ended(handler, published->seq, found->second, true);
  maybe_finish(published->seq, now);
  dispatch(handler, now);
  return true;
}

bool DispatchCore::dead_letter_failed(std::uint64_t publish, TimePoint now) {
  const auto pending = budget_.find(publish);
  if (!pending) return false;
  const RetryPolicy& policy = handlers_[pending->handler].limits.retry;
  const Duration backoff = policy.backoff > Duration(0) ? policy.backoff : settings_.nak_delay;
  const Duration backoff_max = policy.backoff > Duration(0) ? policy.backoff_max : settings_.nak_delay_max;
  budget_.failed(publish, now + RetryBudget::delay(pending->failures + 1, backoff, std::max(backoff, backoff_max)));
  ++handlers_[pending->handler].stats.dead_letter_failures;
  ++counters_.dead_letter_failures;
  return true;
}

void DispatchCore::retry_dead_letters(TimePoint now) {
  for (const auto& due : budget_.due(now)) {
    auto found = messages_.find(due.seq);
    if (found == messages_.end()) continue;
    Effect effect{Effect::Kind::kDeadLetter, found->second.handle};
    effect.handler = due.handler;
    effect.publish = due.id;
    effect.reason = due.reason;
    effects_.push_back(effect);
  }
}

void DispatchCore::abandon_dead_letters() {
  // A publish whose answer has not come may yet be stored: the next reader dead-letters it again
  // (at least once), but nothing is lost.
  for (auto& [seq, message] : messages_) {
    for (const std::size_t handler : budget_.drop_publishes(seq)) message.failed |= HandlerMask{1} << handler;
  }
}

}  // namespace jetfan
