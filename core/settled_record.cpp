#include "settled_record.hpp"

#include <iterator>

namespace jetfan {

std::optional<SettledRecord::Verb> SettledRecord::find(std::uint64_t seq) const {
  auto after = ranges_.upper_bound(seq);
  if (after == ranges_.begin()) return std::nullopt;
  const auto& [first, range] = *std::prev(after);
  if (seq > range.last) return std::nullopt;
  return range.verb;
}

void SettledRecord::add(std::uint64_t seq, Verb verb) {
  if (capacity_ == 0 || find(seq)) return;
  auto right = ranges_.upper_bound(seq);
  const bool joins_left = right != ranges_.begin() && std::prev(right)->second.last + 1 == seq &&
                          std::prev(right)->second.verb == verb;
  const bool joins_right = right != ranges_.end() && right->first == seq + 1 && right->second.verb == verb;
  if (joins_left) {
    auto left = std::prev(right);
    left->second.last = joins_right ? right->second.last : seq;
    if (joins_right) ranges_.erase(right);
  } else if (joins_right) {
    const Range moved = right->second;
    ranges_.erase(right);
    ranges_.emplace(seq, moved);
  } else {
    ranges_.emplace(seq, Range{seq, verb});
  }
  ++covered_;
  trim();
}

void SettledRecord::trim() {
  while (covered_ > capacity_) {
    auto lowest = ranges_.begin();
    const std::size_t length = lowest->second.last - lowest->first + 1;
    const std::size_t excess = covered_ - capacity_;
    if (length <= excess) {
      covered_ -= length;
      ranges_.erase(lowest);
    } else {
      const Range rest = lowest->second;
      const std::uint64_t first = lowest->first + excess;
      ranges_.erase(lowest);
      ranges_.emplace(first, rest);
      covered_ -= excess;
    }
  }
}

void SettledRecord::clear() {
  ranges_.clear();
  covered_ = 0;
}

}  // namespace jetfan
