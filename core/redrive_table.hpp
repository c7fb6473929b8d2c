#pragma once
// RedriveTable: the redrives DispatchCore holds (docs/dispatch-rules.md R41-R43), and the key each
// is held under. A redrive is held in the core's messages like a message of the stream, so that
// dispatch, confirmations, ack_timeout, the retry budget and dead letters serve it unchanged; its key
// is the dead letter's id with the top bit set, which no stream sequence reaches. Anything that
// meets a core key (the retry budget's publishes, say) tells the two apart with is_redrive() and
// gets the dead letter's id back with id_of().
//
// Pure. Memory: one entry per redrive held. Thread: one owner (DispatchCore). Not thread-safe.

#include <cstdint>
#include <optional>
#include <unordered_map>

namespace jetfan {

class RedriveTable {
 public:
  static constexpr std::uint64_t kKeyBit = std::uint64_t{1} << 63;
  static std::uint64_t key_of(std::uint64_t id) { return kKeyBit | id; }
  static bool is_redrive(std::uint64_t key) { return (key & kKeyBit) != 0; }
  static std::uint64_t id_of(std::uint64_t key) { return key & ~kKeyBit; }
  // Whether `id` can name a redrive: not 0, and without the key bit.
  static bool valid_id(std::uint64_t id) { return id != 0 && !is_redrive(id); }

  struct Entry {
    std::uint64_t id = 0;
    bool again = false;  // dead-lettered again (its new dead letter is being published or stored)
  };

  // Precondition: valid_id(id), and no redrive of `id` is held.
  void add(std::uint64_t id) { entries_.emplace(key_of(id), Entry{id, false}); }
  // A redrive's new dead letter was stored; nothing for a key that is not a redrive held.
  void dead_lettered(std::uint64_t key) {
    if (auto found = entries_.find(key); found != entries_.end()) found->second.again = true;
  }
  // Ends the redrive held under `key` and says what it was; nullopt when there is none.
  std::optional<Entry> take(std::uint64_t key) {
    const auto found = entries_.find(key);
    if (found == entries_.end()) return std::nullopt;
    const Entry entry = found->second;
    entries_.erase(found);
    return entry;
  }
  std::size_t size() const { return entries_.size(); }

 private:
  std::unordered_map<std::uint64_t, Entry> entries_;  // by key
};

}  // namespace jetfan
