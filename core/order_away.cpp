#include "order_away.hpp"

#include <algorithm>

namespace jetfan {

Duration order_away_hold(Duration delay, Duration keepalive) {
  // The keepalive is a third of AckWait (config's kKeepalivesPerAckWait).
  return delay + 6 * keepalive;
}

void OrderAway::away(std::uint64_t seq, Duration delay, TimePoint now) {
  const TimePoint until = now + order_away_hold(delay, keepalive_);
  const auto [entry, added] = until_.try_emplace(seq, until);
  if (!added) {
    by_time_.erase({entry->second, seq});
    entry->second = until;
  }
  by_time_.emplace(until, seq);
}

bool OrderAway::back_away(std::uint64_t seq) {
  const auto found = until_.find(seq);
  if (found == until_.end()) return false;
  by_time_.erase({found->second, seq});
  until_.erase(found);
  return true;
}

std::vector<std::uint64_t> OrderAway::take_expired(TimePoint now) {
  std::vector<std::uint64_t> expired;
  auto it = by_time_.begin();
  for (; it != by_time_.end() && it->first <= now; ++it) {
    expired.push_back(it->second);
    until_.erase(it->second);
  }
  by_time_.erase(by_time_.begin(), it);
  // In stream order, as the gate's keys are: the caller lets the rest of each key go in that order.
  std::sort(expired.begin(), expired.end());
  return expired;
}

std::optional<TimePoint> OrderAway::next() const {
  if (by_time_.empty()) return std::nullopt;
  return by_time_.begin()->first;
}

}  // namespace jetfan
