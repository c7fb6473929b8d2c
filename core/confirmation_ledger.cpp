#include "confirmation_ledger.hpp"

#include <algorithm>
#include <functional>

namespace jetfan {

std::optional<std::size_t> ConfirmationLedger::name_id(std::string_view handler) {
  // A module has a handful of handlers: a scan beats a hash of the name.
  for (std::size_t id = 0; id < names_.size(); ++id) {
    if (names_[id] == handler) return id;
  }
  if (names_.size() == kMaxNames) return std::nullopt;
  names_.emplace_back(handler);
  return names_.size() - 1;
}

std::vector<std::string> ConfirmationLedger::names_of(const Names& handlers) const {
  std::vector<std::string> out;
  for (std::size_t id = 0; id < names_.size(); ++id) {
    if (handlers[id]) out.push_back(names_[id]);
  }
  std::sort(out.begin(), out.end());
  return out;
}

void ConfirmationLedger::queue(std::uint64_t seq, Entry& entry, TimePoint due) {
  if (entry.queued || entry.in_flight) return;  // taken up at its turn, or once the server answered
  entry.queued = true;
  due_.emplace_back(due, seq);
  std::push_heap(due_.begin(), due_.end(), std::greater<>());
}

void ConfirmationLedger::confirmed(std::uint64_t seq, std::string_view handler, TimePoint at) {
  const auto id = name_id(handler);
  if (!id) {
    ++counts_.dropped;
    return;
  }
  auto found = entries_.find(seq);
  if (found == entries_.end()) {
    if (entries_.size() >= settings_.max_records) {
      ++counts_.dropped;
      return;
    }
    found = entries_.emplace(seq, Entry{}).first;
    if (const auto loaded = loaded_.find(seq); loaded != loaded_.end()) {
      // The bucket holds what an earlier run wrote: a change rewrites it with these too.
      found->second.handlers = loaded->second;
      found->second.version = found->second.stored = 1;
      loaded_.erase(loaded);
    }
  }
  Entry& entry = found->second;
  if (entry.handlers[*id]) return;
  entry.handlers.set(*id);
  ++entry.version;
  queue(seq, entry, at + settings_.interval);
}

void ConfirmationLedger::settled(std::uint64_t seq, TimePoint now) {
  if (entries_.empty() && loaded_.empty()) return;  // the common case: nothing was ever recorded
  auto found = entries_.find(seq);
  if (found == entries_.end()) {
    const auto loaded = loaded_.find(seq);
    if (loaded == loaded_.end()) return;  // the common case: nothing was ever recorded
    Entry entry;
    entry.handlers = loaded->second;
    entry.version = entry.stored = 1;
    loaded_.erase(loaded);
    found = entries_.emplace(seq, entry).first;
  }
  Entry& entry = found->second;
  if (entry.stored == 0 && !entry.in_flight) {
    entries_.erase(found);  // confirmed by all within `interval`: never written
    return;
  }
  entry.settled = true;
  queue(seq, entry, now + settings_.interval);
}

std::vector<LedgerChange> ConfirmationLedger::take_due(TimePoint now) {
  std::vector<LedgerChange> changes;
  while (!due_.empty() && due_.front().first <= now && in_flight_ < settings_.max_in_flight) {
    const std::uint64_t seq = due_.front().second;
    std::pop_heap(due_.begin(), due_.end(), std::greater<>());
    due_.pop_back();
    const auto found = entries_.find(seq);
    if (found == entries_.end()) continue;
    Entry& entry = found->second;
    entry.queued = false;
    if (entry.in_flight) continue;
    LedgerChange change;
    change.seq = seq;
    change.version = entry.version;
    if (entry.settled) {
      if (entry.stored == 0) {
        entries_.erase(found);
        continue;
      }
      change.kind = LedgerChange::Kind::kDelete;
    } else if (entry.version != entry.stored) {
      change.kind = LedgerChange::Kind::kPut;
      change.handlers = names_of(entry.handlers);
    } else {
      continue;
    }
    entry.in_flight = true;
    ++in_flight_;
    changes.push_back(std::move(change));
  }
  return changes;
}

std::vector<LedgerChange> ConfirmationLedger::take_all() {
  std::vector<LedgerChange> changes;
  for (const auto& [due, seq] : due_) {
    const auto found = entries_.find(seq);
    if (found == entries_.end() || !found->second.queued) continue;
    Entry& entry = found->second;
    entry.queued = false;  // a seq queued twice goes once
    LedgerChange change;
    change.seq = seq;
    change.version = entry.version;
    if (entry.settled) {
      if (entry.stored == 0) continue;
      change.kind = LedgerChange::Kind::kDelete;
    } else if (entry.version != entry.stored) {
      change.handlers = names_of(entry.handlers);
    } else {
      continue;
    }
    changes.push_back(std::move(change));
  }
  std::stable_partition(changes.begin(), changes.end(),
                        [](const LedgerChange& c) { return c.kind == LedgerChange::Kind::kPut; });
  due_.clear();
  entries_.clear();
  in_flight_ = 0;
  return changes;
}

void ConfirmationLedger::written(const LedgerChange& change, bool ok, TimePoint now) {
  const auto found = entries_.find(change.seq);
  if (found == entries_.end() || !found->second.in_flight) return;
  Entry& entry = found->second;
  entry.in_flight = false;
  --in_flight_;
  if (ok && change.kind == LedgerChange::Kind::kDelete) {
    ++counts_.deletes;
    entries_.erase(found);
    return;
  }
  if (ok) {
    ++counts_.puts;
    entry.stored = change.version;
  } else {
    ++counts_.failed;
  }
  if (entry.settled || entry.version != entry.stored) queue(change.seq, entry, now + settings_.interval);
}

std::optional<TimePoint> ConfirmationLedger::next_due() const {
  if (due_.empty() || in_flight_ >= settings_.max_in_flight) return std::nullopt;
  return due_.front().first;
}

void ConfirmationLedger::load(std::uint64_t seq, const std::vector<std::string>& handlers) {
  if (loaded_.size() >= settings_.max_records && !loaded_.contains(seq)) {
    ++counts_.dropped;
    return;
  }
  Names names;
  for (const std::string& handler : handlers) {
    if (const auto id = name_id(handler)) names.set(*id);
  }
  loaded_[seq] |= names;
  ++counts_.loaded;
}

std::vector<std::string> ConfirmationLedger::confirmed_before(std::uint64_t seq) const {
  Names names;
  if (const auto loaded = loaded_.find(seq); loaded != loaded_.end()) names |= loaded->second;
  if (const auto entry = entries_.find(seq); entry != entries_.end()) names |= entry->second.handlers;
  return names_of(names);
}

void ConfirmationLedger::forget_below(std::uint64_t seq) { loaded_.erase(loaded_.begin(), loaded_.lower_bound(seq)); }

}  // namespace jetfan
