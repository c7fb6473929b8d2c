#include "retry_queue.hpp"

namespace jetfan {

std::vector<RetryQueue::Due> RetryQueue::take_due(TimePoint now) {
  std::vector<Due> out;
  const auto end = due_.upper_bound(now);
  for (auto it = due_.begin(); it != end; ++it) out.push_back(it->second);
  due_.erase(due_.begin(), end);
  return out;
}

std::optional<TimePoint> RetryQueue::next() const {
  if (due_.empty()) return std::nullopt;
  return due_.begin()->first;
}

void RetryQueue::reindex(const std::vector<std::optional<std::size_t>>& old_to_new) {
  std::multimap<TimePoint, Due> kept;
  for (const auto& [at, entry] : due_) {
    if (entry.handler < old_to_new.size() && old_to_new[entry.handler]) {
      kept.emplace(at, Due{*old_to_new[entry.handler], entry.key});
    }
  }
  due_ = std::move(kept);
}

}  // namespace jetfan
