#include "order_gate.hpp"

#include <cassert>

namespace jetfan {

void OrderGate::add(std::size_t handler, std::string_view key, std::uint64_t seq) {
  assert(handler < handlers_.size());
  PerHandler& per = handlers_[handler];
  if (per.key_of.count(seq)) return;
  auto entry = per.keys.find(key);
  if (entry == per.keys.end()) entry = per.keys.emplace(std::string(key), Key{}).first;
  entry->second.owed.insert(seq);
  per.key_of.emplace(seq, entry);
  ++entries_;
}

bool OrderGate::contains(std::size_t handler, std::uint64_t seq) const {
  return handler < handlers_.size() && handlers_[handler].key_of.count(seq) != 0;
}

bool OrderGate::may_deliver(std::size_t handler, std::uint64_t seq) const {
  if (handler >= handlers_.size()) return true;
  const auto found = handlers_[handler].key_of.find(seq);
  if (found == handlers_[handler].key_of.end()) return true;
  const Key& key = found->second->second;
  return key.in_flight == 0 && *key.owed.begin() == seq;
}

void OrderGate::started(std::size_t handler, std::uint64_t seq) {
  if (handler >= handlers_.size()) return;
  const auto found = handlers_[handler].key_of.find(seq);
  if (found != handlers_[handler].key_of.end()) found->second->second.in_flight = seq;
}

std::optional<std::uint64_t> OrderGate::stopped(std::size_t handler, std::uint64_t seq) {
  if (handler >= handlers_.size()) return std::nullopt;
  const auto found = handlers_[handler].key_of.find(seq);
  if (found == handlers_[handler].key_of.end()) return std::nullopt;
  Key& key = found->second->second;
  if (key.in_flight != seq) return std::nullopt;
  key.in_flight = 0;
  const std::uint64_t head = *key.owed.begin();
  if (head == seq) return std::nullopt;
  return head;
}

std::optional<std::uint64_t> OrderGate::settle(std::size_t handler, std::uint64_t seq) {
  if (handler >= handlers_.size()) return std::nullopt;
  PerHandler& per = handlers_[handler];
  const auto found = per.key_of.find(seq);
  if (found == per.key_of.end()) return std::nullopt;
  const auto entry = found->second;
  per.key_of.erase(found);
  --entries_;
  Key& key = entry->second;
  key.owed.erase(seq);
  if (key.in_flight == seq) key.in_flight = 0;
  if (key.owed.empty()) {
    per.keys.erase(entry);
    return std::nullopt;
  }
  if (key.in_flight != 0) return std::nullopt;
  return *key.owed.begin();
}

std::vector<std::pair<std::size_t, std::uint64_t>> OrderGate::forget(std::uint64_t seq) {
  std::vector<std::pair<std::size_t, std::uint64_t>> next;
  for (std::size_t h = 0; h < handlers_.size(); ++h) {
    if (auto head = settle(h, seq)) next.emplace_back(h, *head);
  }
  return next;
}

void OrderGate::reindex(const std::vector<std::optional<std::size_t>>& old_to_new, std::size_t new_count) {
  assert(old_to_new.size() == handlers_.size());
  std::vector<PerHandler> moved(new_count);
  for (std::size_t h = 0; h < handlers_.size(); ++h) {
    if (old_to_new[h] && *old_to_new[h] < new_count) moved[*old_to_new[h]] = std::move(handlers_[h]);
  }
  handlers_ = std::move(moved);
  entries_ = 0;
  for (const auto& per : handlers_) entries_ += per.key_of.size();
}

OrderLoad OrderGate::load(std::size_t handler) const {
  OrderLoad out;
  if (handler >= handlers_.size()) return out;
  for (const auto& [name, key] : handlers_[handler].keys) {
    ++out.keys;
    if (key.owed.size() > 1) {
      ++out.blocked_keys;
      out.waiting += key.owed.size() - 1;
    }
  }
  return out;
}

std::optional<std::string> OrderGate::key_of(std::size_t handler, std::uint64_t seq) const {
  if (handler >= handlers_.size()) return std::nullopt;
  const auto found = handlers_[handler].key_of.find(seq);
  if (found == handlers_[handler].key_of.end()) return std::nullopt;
  return found->second->first;
}

std::optional<std::uint64_t> OrderGate::oldest_owed(std::size_t handler, std::uint64_t seq) const {
  if (handler >= handlers_.size()) return std::nullopt;
  const auto found = handlers_[handler].key_of.find(seq);
  if (found == handlers_[handler].key_of.end()) return std::nullopt;
  return *found->second->second.owed.begin();
}

}  // namespace jetfan
