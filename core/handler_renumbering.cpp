#include "handler_renumbering.hpp"

#include <bit>
#include <cassert>

namespace jetfan {

HandlerRenumbering::HandlerRenumbering(const std::vector<std::optional<std::size_t>>& old_to_new)
    : old_count_(old_to_new.size()) {
  assert(old_to_new.size() <= kMaxHandlers);
  for (std::size_t h = 0; h < old_to_new.size(); ++h) {
    if (!old_to_new[h]) {
      removed_ |= HandlerMask{1} << h;
      continue;
    }
    assert(*old_to_new[h] < kMaxHandlers);
    moved_[h] = HandlerMask{1} << *old_to_new[h];
  }
}

HandlerMask HandlerRenumbering::mask(HandlerMask old) const {
  // A reload walks every held message, a few masks each: one step per bit set, not per handler.
  HandlerMask out = 0;
  for (; old != 0; old &= old - 1) out |= moved_[static_cast<std::size_t>(std::countr_zero(old))];
  return out;
}

}  // namespace jetfan
