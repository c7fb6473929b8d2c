#include "retry_budget.hpp"

#include <algorithm>

namespace jetfan {

const char* cause_word(FailCause cause) {
  switch (cause) {
    case FailCause::kNak:
      return "nak";
    case FailCause::kTimeout:
      return "ack_timeout";
    case FailCause::kDisconnect:
      return "disconnect";
  }
  return "?";
}

std::string describe(const GiveUpReason& reason) {
  if (reason.termed) return "TERM";
  return "max_attempts " + std::to_string(reason.max_attempts) + " used up; last: " + cause_word(reason.last);
}

void AttemptsHistogram::observe(std::uint32_t attempts) {
  const auto bucket =
      static_cast<std::size_t>(std::lower_bound(kBounds.begin(), kBounds.end(), attempts) - kBounds.begin());
  ++counts_[bucket];
  ++count_;
  sum_ += attempts;
}

std::uint32_t RetryBudget::count_failure(std::uint64_t seq, std::size_t handler, FailCause /*cause*/,
                                         std::uint64_t server_deliveries) {
  const auto [found, made] = entries_.try_emplace(seq);
  Entry& entry = found->second;
  if (made) entry.before = server_deliveries > 0 ? server_deliveries - 1 : 0;
  for (Count& count : entry.counts) {
    if (count.handler == handler) return ++count.attempts;
  }
  entry.counts.push_back(Count{handler, 1});
  return 1;
}

std::uint32_t RetryBudget::attempts(std::uint64_t seq, std::size_t handler) const {
  const auto found = entries_.find(seq);
  if (found == entries_.end()) return 0;
  for (const Count& count : found->second.counts) {
    if (count.handler == handler) return count.attempts;
  }
  return 0;
}

std::uint64_t RetryBudget::deliveries_to(std::uint64_t seq, std::size_t handler,
                                         std::uint64_t server_deliveries) const {
  const auto found = entries_.find(seq);
  if (found == entries_.end()) return std::max<std::uint64_t>(server_deliveries, 1);
  std::uint64_t failed = 0;
  for (const Count& count : found->second.counts) {
    if (count.handler == handler) failed = count.attempts;
  }
  return found->second.before + failed + 1;
}

Duration RetryBudget::delay(std::uint32_t attempts, Duration backoff, Duration backoff_max) {
  Duration wait = backoff;
  for (std::uint32_t i = 1; i < attempts && wait < backoff_max; ++i) wait *= 2;
  return std::min(wait, backoff_max);
}

void RetryBudget::handed_back(std::uint64_t seq) {
  auto found = entries_.find(seq);
  if (found == entries_.end()) return;
  if (remember_ == 0) {
    entries_.erase(found);
    return;
  }
  if (found->second.stamp == 0) ++handed_back_count_;
  found->second.stamp = ++stamp_;
  handed_back_.emplace_back(seq, stamp_);
  while (handed_back_count_ > remember_ && !handed_back_.empty()) {
    const auto [oldest, stamp] = handed_back_.front();
    handed_back_.pop_front();
    auto entry = entries_.find(oldest);
    if (entry != entries_.end() && entry->second.stamp == stamp) {
      entries_.erase(entry);
      --handed_back_count_;
    }
  }
  // Stale (seq, stamp) pairs of messages that came back linger; drop them now and then.
  if (handed_back_.size() > 2 * remember_ + 1024) {
    std::erase_if(handed_back_, [this](const auto& pair) {
      auto entry = entries_.find(pair.first);
      return entry == entries_.end() || entry->second.stamp != pair.second;
    });
  }
}

void RetryBudget::held_again(std::uint64_t seq) {
  auto found = entries_.find(seq);
  if (found == entries_.end() || found->second.stamp == 0) return;
  found->second.stamp = 0;
  --handed_back_count_;
}

void RetryBudget::forget(std::uint64_t seq) {
  auto found = entries_.find(seq);
  if (found == entries_.end()) return;
  if (found->second.stamp != 0) --handed_back_count_;
  entries_.erase(found);
}

void RetryBudget::forget_handed_back() {
  std::erase_if(entries_, [](const auto& entry) { return entry.second.stamp != 0; });
  handed_back_.clear();
  handed_back_count_ = 0;
}

std::uint64_t RetryBudget::begin_publish(std::uint64_t seq, std::size_t handler, const GiveUpReason& reason) {
  const std::uint64_t id = next_id_++;
  pending_[Key{seq, handler}] = Pending{id, reason, 0, {}};
  by_id_[id] = Key{seq, handler};
  return id;
}

bool RetryBudget::publishing(std::uint64_t seq) const {
  const auto found = pending_.lower_bound(Key{seq, 0});
  return found != pending_.end() && found->first.first == seq;
}

bool RetryBudget::publishing(std::uint64_t seq, std::size_t handler) const {
  return pending_.count(Key{seq, handler}) != 0;
}

std::optional<RetryBudget::Published> RetryBudget::stored(std::uint64_t id) {
  const auto key = by_id_.find(id);
  if (key == by_id_.end()) return std::nullopt;
  const auto found = pending_.find(key->second);
  by_id_.erase(key);
  if (found == pending_.end() || found->second.id != id) return std::nullopt;
  Published out{found->first.first, found->first.second, found->second.reason, found->second.failures};
  pending_.erase(found);
  return out;
}

std::optional<RetryBudget::Published> RetryBudget::find(std::uint64_t id) const {
  const auto key = by_id_.find(id);
  if (key == by_id_.end()) return std::nullopt;
  const auto found = pending_.find(key->second);
  if (found == pending_.end() || found->second.id != id) return std::nullopt;
  return Published{found->first.first, found->first.second, found->second.reason, found->second.failures};
}

std::optional<RetryBudget::Published> RetryBudget::failed(std::uint64_t id, TimePoint retry_at) {
  const auto key = by_id_.find(id);
  if (key == by_id_.end()) return std::nullopt;
  const auto found = pending_.find(key->second);
  by_id_.erase(key);
  if (found == pending_.end() || found->second.id != id) return std::nullopt;
  Pending& pending = found->second;
  Published out{found->first.first, found->first.second, pending.reason, pending.failures};
  pending.id = 0;
  ++pending.failures;
  pending.retry_at = retry_at;
  return out;
}

std::vector<RetryBudget::Due> RetryBudget::due(TimePoint now) {
  std::vector<Due> out;
  for (auto& [key, pending] : pending_) {
    if (pending.id != 0 || pending.retry_at > now) continue;
    pending.id = next_id_++;
    by_id_[pending.id] = key;
    out.push_back(Due{pending.id, key.first, key.second, pending.reason});
  }
  return out;
}

std::optional<TimePoint> RetryBudget::next_retry() const {
  std::optional<TimePoint> next;
  for (const auto& [key, pending] : pending_) {
    if (pending.id == 0 && (!next || pending.retry_at < *next)) next = pending.retry_at;
  }
  return next;
}

std::vector<std::size_t> RetryBudget::drop_publishes(std::uint64_t seq) {
  std::vector<std::size_t> handlers;
  auto it = pending_.lower_bound(Key{seq, 0});
  while (it != pending_.end() && it->first.first == seq) {
    if (it->second.id != 0) by_id_.erase(it->second.id);
    handlers.push_back(it->first.second);
    it = pending_.erase(it);
  }
  return handlers;
}

void RetryBudget::reindex(const std::vector<std::optional<std::size_t>>& old_to_new) {
  auto moved = [&](std::size_t handler) -> std::optional<std::size_t> {
    return handler < old_to_new.size() ? old_to_new[handler] : std::nullopt;
  };
  for (auto& [seq, entry] : entries_) {
    std::vector<Count> kept;
    for (const Count& count : entry.counts) {
      if (const auto to = moved(count.handler)) kept.push_back(Count{*to, count.attempts});
    }
    entry.counts = std::move(kept);
  }
  std::map<Key, Pending> pending;
  by_id_.clear();
  for (auto& [key, value] : pending_) {
    const auto to = moved(key.second);
    if (!to) continue;
    const Key now{key.first, *to};
    if (value.id != 0) by_id_[value.id] = now;
    pending.emplace(now, value);
  }
  pending_ = std::move(pending);
}

}  // namespace jetfan
