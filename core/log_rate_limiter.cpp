#include "log_rate_limiter.hpp"

namespace jetfan {

LogRateLimiter::Verdict LogRateLimiter::allow(const std::string& key, TimePoint now) {
  auto [it, fresh] = entries_.try_emplace(key, Entry{now, 0, 0});
  Entry& entry = it->second;
  Verdict verdict;
  if (!fresh && now - entry.window_start >= window_) {
    verdict.suppressed_before = entry.suppressed;
    entry = Entry{now, 0, 0};
  }
  if (entry.logged < burst_) {
    ++entry.logged;
    verdict.log = true;
    return verdict;
  }
  ++entry.suppressed;
  return Verdict{false, 0};
}

std::vector<std::pair<std::string, std::uint64_t>> LogRateLimiter::take_expired(TimePoint now) {
  std::vector<std::pair<std::string, std::uint64_t>> out;
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (now - it->second.window_start < window_) {
      ++it;
      continue;
    }
    if (it->second.suppressed > 0) out.emplace_back(it->first, it->second.suppressed);
    it = entries_.erase(it);
  }
  return out;
}

}  // namespace jetfan
