#include "settled_record.hpp"

#include <iterator>

namespace jetfan {

std::optional<SettledRecord::Verb> SettledRecord::find(std::uint64_t seq) const {
  if (!highest_ || seq > highest_->last) return std::nullopt;
  if (seq >= highest_->first) return highest_->verb;
  return find_lower(seq);
}

std::optional<SettledRecord::Verb> SettledRecord::find_lower(std::uint64_t seq) const {
  auto after = lower_.upper_bound(seq);
  if (after == lower_.begin()) return std::nullopt;
  const Range& range = std::prev(after)->second;
  if (seq > range.last) return std::nullopt;
  return range.verb;
}

void SettledRecord::add(std::uint64_t seq, Verb verb) {
  if (capacity_ == 0) return;
  if (!highest_) {
    highest_ = Range{seq, seq, verb};
  } else if (seq > highest_->last) {
    if (seq == highest_->last + 1 && verb == highest_->verb) {
      highest_->last = seq;  // settling in order: the common case
    } else {
      lower_.emplace(highest_->first, *highest_);  // everything in lower_ is below it
      highest_ = Range{seq, seq, verb};
    }
  } else if (seq >= highest_->first || find_lower(seq)) {
    return;  // already recorded
  } else if (seq + 1 == highest_->first && verb == highest_->verb) {
    highest_->first = seq;
    // A gap filled: the lower range that now touches the highest joins it.
    if (!lower_.empty()) {
      auto below = std::prev(lower_.end());
      if (below->second.last + 1 == seq && below->second.verb == verb) {
        highest_->first = below->second.first;
        lower_.erase(below);
      }
    }
  } else {
    add_lower(seq, verb);
  }
  // Trimming in chunks keeps its cost per add near zero: a little more than capacity is kept.
  if (++covered_ > capacity_ + capacity_ / 8) trim();
}

void SettledRecord::add_lower(std::uint64_t seq, Verb verb) {
  auto right = lower_.upper_bound(seq);
  const bool joins_left =
      right != lower_.begin() && std::prev(right)->second.last + 1 == seq && std::prev(right)->second.verb == verb;
  const bool joins_right = right != lower_.end() && right->first == seq + 1 && right->second.verb == verb;
  if (joins_left) {
    auto left = std::prev(right);
    left->second.last = joins_right ? right->second.last : seq;
    if (joins_right) lower_.erase(right);
  } else if (joins_right) {
    auto node = lower_.extract(right);
    node.key() = seq;
    node.mapped().first = seq;
    lower_.insert(std::move(node));
  } else {
    lower_.emplace(seq, Range{seq, seq, verb});
  }
}

void SettledRecord::trim() {
  while (covered_ > capacity_ && !lower_.empty()) {
    auto lowest = lower_.begin();
    const std::size_t length = lowest->second.last - lowest->first + 1;
    const std::size_t excess = covered_ - capacity_;
    if (length <= excess) {
      covered_ -= length;
      lower_.erase(lowest);
    } else {
      auto node = lower_.extract(lowest);
      node.key() += excess;
      node.mapped().first += excess;
      lower_.insert(std::move(node));
      covered_ -= excess;
    }
  }
  if (covered_ > capacity_ && highest_) {
    highest_->first += covered_ - capacity_;
    covered_ = capacity_;
  }
}

void SettledRecord::clear() {
  lower_.clear();
  highest_.reset();
  covered_ = 0;
}

}  // namespace jetfan
