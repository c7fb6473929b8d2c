#pragma once
// OrderGate: which messages an ordered handler may be given now.
//
// For each ordered handler and each order key, the stream sequences of that key the handler still
// owes (not ACKed or TERMed by it), oldest first, and the one of them in flight, if any. A message may
// go to the handler only when it is the oldest it owes of its key and nothing of that key is in
// flight to it: so the handler never has two messages of one key at once, and never a later one
// before every earlier one is settled for it. Messages of different keys pass independently.
//
// An entry stays while the handler owes the message, wherever the message is: held by the core,
// being retried after a failure, or handed back to the server and not yet delivered again (the
// core decides when such an entry is given up, see forget()). Memory: one entry per sequence owed
// by an ordered handler, one key per key with an entry; nothing is kept for a key once it is empty.
//
// Pure and single-threaded, like DispatchCore, which owns one.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace jetfan {

// One ordered recipient of a message, as the caller computed it at arrival.
struct OrderKey {
  std::size_t handler = 0;
  std::string key;
};

// What one ordered handler waits for now; computed on request.
struct OrderLoad {
  std::size_t keys = 0;          // keys with something owed
  std::size_t blocked_keys = 0;  // keys with more than one message owed: the later ones wait
  std::size_t waiting = 0;       // messages owed behind the oldest of their key
};

class OrderGate {
 public:
  explicit OrderGate(std::size_t handlers = 0) : handlers_(handlers) {}

  // `handler` owes `seq`, of `key`. Nothing changes if it is already recorded (its key stays the one
  // it had). Precondition: handler < handler_count().
  void add(std::size_t handler, std::string_view key, std::uint64_t seq);
  bool contains(std::size_t handler, std::uint64_t seq) const;
  // Whether `seq` may go to `handler` now: the oldest it owes of its key and nothing of the key in
  // flight to it. True for a sequence the gate does not know (it is not ordered for the handler).
  bool may_deliver(std::size_t handler, std::uint64_t seq) const;
  // `seq` went to `handler` (may_deliver was true).
  void started(std::size_t handler, std::uint64_t seq);
  // Its delivery ended without settling it: it stays owed. Returns the sequence of its key that may
  // go to the handler now when that is another, older one (one that came back meanwhile).
  std::optional<std::uint64_t> stopped(std::size_t handler, std::uint64_t seq);
  // `handler` no longer owes `seq` (settled it, or gave it up). Returns the sequence of that key
  // that may go to it now, if any. Unknown sequences are ignored.
  std::optional<std::uint64_t> settle(std::size_t handler, std::uint64_t seq);
  // `seq` is given up for every handler (it will not come back); the sequences each may now be
  // given, as (handler, seq).
  std::vector<std::pair<std::size_t, std::uint64_t>> forget(std::uint64_t seq);

  // A reload: old_to_new[i] is the new index of handler i, or nullopt when it was removed (its
  // entries go). Precondition: old_to_new.size() == handler_count().
  void reindex(const std::vector<std::optional<std::size_t>>& old_to_new, std::size_t new_count);

  std::size_t handler_count() const { return handlers_.size(); }
  std::size_t entries() const { return entries_; }  // sequences recorded, over all handlers
  OrderLoad load(std::size_t handler) const;
  // The key `seq` is recorded under for `handler`, if it is, and the oldest sequence of that key owed.
  std::optional<std::string> key_of(std::size_t handler, std::uint64_t seq) const;
  std::optional<std::uint64_t> oldest_owed(std::size_t handler, std::uint64_t seq) const;

 private:
  struct Key {
    std::set<std::uint64_t> owed;
    std::uint64_t in_flight = 0;  // 0: none
  };
  using Keys = std::map<std::string, Key, std::less<>>;
  struct PerHandler {
    Keys keys;
    std::unordered_map<std::uint64_t, Keys::iterator> key_of;  // by seq; map iterators stay valid
  };
  std::vector<PerHandler> handlers_;
  std::size_t entries_ = 0;
};

}  // namespace jetfan
