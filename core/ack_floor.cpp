#include "ack_floor.hpp"

#include <algorithm>
#include <iterator>

namespace jetfan {
namespace {

// Straight into the core's own list: a list of steps of AckFloor's own, for the core to turn into
// effects, cost about 90 instructions per message settled under AckPolicy all (callgrind).
void emit(AckFloor::Effects& out, Effect::Kind kind, MessageHandle handle, Duration delay = Duration(0)) {
  out.push_back(Effect{kind, handle, 0, 0, delay});
}

}  // namespace

void AckFloor::settle(std::uint64_t seq, MessageHandle handle, bool terminate, TimePoint touched, std::uint64_t ceiling,
                      Effects& out) {
  // A message settled at once (unroutable, a copy of one settled earlier) was never unsettled; the
  // erase then finds nothing.
  unsettled_.erase(seq);
  waiting_.emplace(seq, Waiting{handle, touched, terminate});
  advance(ceiling, out);
  // Passed at once, it was released above; otherwise only its reply subject is needed now.
  if (waiting_.count(seq) != 0) emit(out, Effect::Kind::kTrim, handle);
}

void AckFloor::gone(std::uint64_t seq, std::uint64_t ceiling, Effects& out) {
  unsettled_.erase(seq);
  advance(ceiling, out);
}

void AckFloor::advance(std::uint64_t ceiling, Effects& out) {
  const std::uint64_t floor = unsettled_.empty() ? ceiling : std::min(ceiling, *unsettled_.begin());
  const auto end = waiting_.lower_bound(floor);
  if (end == waiting_.begin()) return;
  // Everything below the floor is settled, so each +TERM (in order, for its advisory) and the one
  // +ACK of the highest settle only what may be settled. A +TERM of the highest settles the rest as
  // well: no +ACK then.
  for (auto it = waiting_.begin(); it != end; ++it) {
    if (it->second.terminate) emit(out, Effect::Kind::kTerm, it->second.handle);
  }
  const auto highest = std::prev(end);
  if (!highest->second.terminate) emit(out, Effect::Kind::kAck, highest->second.handle);
  for (auto it = waiting_.begin(); it != end; ++it) emit(out, Effect::Kind::kRelease, it->second.handle);
  waiting_.erase(waiting_.begin(), end);
}

bool AckFloor::copy_waiting(std::uint64_t seq, MessageHandle handle, TimePoint now, Effects& out) {
  const auto found = waiting_.find(seq);
  if (found == waiting_.end()) return false;
  emit(out, Effect::Kind::kRelease, found->second.handle);
  found->second.handle = handle;
  found->second.touched = now;
  emit(out, Effect::Kind::kTrim, handle);
  return true;
}

void AckFloor::touch(TimePoint stale, TimePoint now, Effects& out) {
  for (auto& [seq, waiting] : waiting_) {
    if (waiting.touched > stale) continue;
    emit(out, Effect::Kind::kWip, waiting.handle);
    waiting.touched = now;
  }
}

void AckFloor::abandon(Duration delay, Effects& out) {
  for (const auto& [seq, waiting] : waiting_) {
    emit(out, Effect::Kind::kNak, waiting.handle, delay);
    emit(out, Effect::Kind::kRelease, waiting.handle);
  }
  waiting_.clear();
}

}  // namespace jetfan
