#pragma once
// RetryQueue: the deliveries DispatchCore tries again itself, after a failure's delay, instead of
// handing the message back to the server: those an ordered handler still owes (R22) and redrives
// (R42). Each entry is (handler, the message's key in the core) at a time; the core drops an entry
// it no longer wants by clearing its own retrying bit, so an entry here may be stale and the caller
// checks each one it takes.
//
// Pure: no I/O, no clock. Memory: one entry per retry scheduled and not yet due.
// Thread: one owner (DispatchCore). Not thread-safe.

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "time.hpp"

namespace jetfan {

class RetryQueue {
 public:
  struct Due {
    std::size_t handler;
    std::uint64_t key;
  };

  void schedule(TimePoint at, std::size_t handler, std::uint64_t key) { due_.emplace(at, Due{handler, key}); }
  // Every entry due by `now`, earliest first (in the order scheduled for one time), removed.
  std::vector<Due> take_due(TimePoint now);
  std::optional<TimePoint> next() const;
  // A reload renumbered the handlers: old index h is now old_to_new[h], or gone (its entries go).
  void reindex(const std::vector<std::optional<std::size_t>>& old_to_new);
  std::size_t size() const { return due_.size(); }

 private:
  std::multimap<TimePoint, Due> due_;
};

}  // namespace jetfan
