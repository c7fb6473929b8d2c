#include "ack_floor.hpp"

#include <algorithm>
#include <iterator>

namespace jetfan {

void AckFloor::settle(std::uint64_t seq, Handle handle, bool terminate, TimePoint touched, std::uint64_t ceiling,
                      Steps& out) {
  // A message settled at once (unroutable, a copy of one settled earlier) was never unsettled; the
  // erase then finds nothing.
  unsettled_.erase(seq);
  waiting_.emplace(seq, Waiting{handle, touched, terminate});
  advance(ceiling, out);
  // Passed at once, it was released above; otherwise only its reply subject is needed now.
  if (waiting_.count(seq) != 0) out.push_back(Step{Step::Verb::kTrim, handle});
}

void AckFloor::gone(std::uint64_t seq, std::uint64_t ceiling, Steps& out) {
  unsettled_.erase(seq);
  advance(ceiling, out);
}

void AckFloor::advance(std::uint64_t ceiling, Steps& out) {
  const std::uint64_t floor = unsettled_.empty() ? ceiling : std::min(ceiling, *unsettled_.begin());
  const auto end = waiting_.lower_bound(floor);
  if (end == waiting_.begin()) return;
  // Everything below the floor is settled, so each +TERM (in order, for its advisory) and the one
  // +ACK of the highest settle only what may be settled. A +TERM of the highest settles the rest as
  // well: no +ACK then.
  for (auto it = waiting_.begin(); it != end; ++it) {
    if (it->second.terminate) out.push_back(Step{Step::Verb::kTerm, it->second.handle});
  }
  const auto highest = std::prev(end);
  if (!highest->second.terminate) out.push_back(Step{Step::Verb::kAck, highest->second.handle});
  for (auto it = waiting_.begin(); it != end; ++it) out.push_back(Step{Step::Verb::kRelease, it->second.handle});
  waiting_.erase(waiting_.begin(), end);
}

bool AckFloor::copy_waiting(std::uint64_t seq, Handle handle, TimePoint now, Steps& out) {
  const auto found = waiting_.find(seq);
  if (found == waiting_.end()) return false;
  out.push_back(Step{Step::Verb::kRelease, found->second.handle});
  found->second.handle = handle;
  found->second.touched = now;
  out.push_back(Step{Step::Verb::kTrim, handle});
  return true;
}

void AckFloor::touch(TimePoint stale, TimePoint now, Steps& out) {
  for (auto& [seq, waiting] : waiting_) {
    if (waiting.touched > stale) continue;
    out.push_back(Step{Step::Verb::kWip, waiting.handle});
    waiting.touched = now;
  }
}

void AckFloor::abandon(Steps& out) {
  for (const auto& [seq, waiting] : waiting_) {
    out.push_back(Step{Step::Verb::kNak, waiting.handle});
    out.push_back(Step{Step::Verb::kRelease, waiting.handle});
  }
  waiting_.clear();
}

}  // namespace jetfan
