#pragma once
// HandlerRenumbering: a reload's new handler numbers (docs/dispatch-rules.md R36), applied to the
// masks of handlers the core keeps per message. old_to_new[i] is the new index of the handler that
// had index i, or nullopt when the reload removed it; a removed handler's bits are dropped.
//
// Pure: no I/O. Memory: a mask per old index, fixed size. Thread: any; immutable once made.

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "topic_pattern.hpp"

namespace jetfan {

class HandlerRenumbering {
 public:
  // Preconditions: old_to_new.size() <= kMaxHandlers; every new index < kMaxHandlers, and no two old
  // handlers map to one.
  explicit HandlerRenumbering(const std::vector<std::optional<std::size_t>>& old_to_new);

  // The bits of `mask` (old indices) at their new indices; those of removed handlers, and any beyond
  // the old table, dropped.
  HandlerMask mask(HandlerMask old) const;
  // The handlers the reload removed, by old index.
  HandlerMask removed() const { return removed_; }
  std::size_t old_count() const { return old_count_; }

 private:
  std::array<HandlerMask, kMaxHandlers> moved_{};  // by old index: its new bit, 0 when removed
  HandlerMask removed_ = 0;
  std::size_t old_count_ = 0;
};

}  // namespace jetfan
