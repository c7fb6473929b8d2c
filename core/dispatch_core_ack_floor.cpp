// DispatchCore, continued: the ack floor of AckPolicy all (docs/dispatch-rules.md R17-R19).
// One +ACK settles every lower sequence at the server, those the core never saw included; so a
// settled message waits until nothing below it is unsettled, and nothing goes while the server may
// hold messages the core has not seen yet.

#include <algorithm>
#include <limits>

#include "dispatch_core.hpp"

namespace jetfan {

void DispatchCore::wait_for_floor(std::uint64_t seq, MessageHandle handle, bool terminate, TimePoint touched) {
  settled_unacked_.emplace(seq, SettledUnacked{handle, touched, terminate});
  advance_ack_floor();
  if (settled_unacked_.count(seq)) emit(Effect::Kind::kTrim, handle);
}

void DispatchCore::advance_ack_floor() {
  if (floor_hold_) return;
  std::uint64_t floor = unsettled_.empty() ? std::numeric_limits<std::uint64_t>::max() : *unsettled_.begin();
  // After a gap, what may have been lost is unsettled too.
  if (gap_.held()) floor = std::min(floor, gap_.floor() + 1);
  const auto end = settled_unacked_.lower_bound(floor);
  if (end == settled_unacked_.begin()) return;
  // Everything below the floor is settled, so each +TERM (in order, for its advisory) and the one
  // +ACK of the highest settle only what may be settled.
  for (auto it = settled_unacked_.begin(); it != end; ++it) {
    if (it->second.terminate) emit(Effect::Kind::kTerm, it->second.handle);
  }
  const auto highest = std::prev(end);
  if (!highest->second.terminate) emit(Effect::Kind::kAck, highest->second.handle);
  for (auto it = settled_unacked_.begin(); it != end; ++it) emit(Effect::Kind::kRelease, it->second.handle);
  settled_unacked_.erase(settled_unacked_.begin(), end);
}

void DispatchCore::floor_hold_end() {
  floor_hold_.reset();
  advance_ack_floor();
}

}  // namespace jetfan
