#include "full_policy.hpp"

#include <algorithm>

namespace jetfan {

std::vector<HandBackOrder> hand_backs_when_full(std::span<const HandlerLoad> loads, const std::vector<bool>& hands_back,
                                                std::size_t held) {
  std::vector<HandBackOrder> orders;
  if (loads.empty()) return orders;
  // Full by count, what is held is max_held; full by bytes, it may be fewer, bigger messages.
  const std::size_t share = std::max<std::size_t>(1, held / loads.size());
  for (std::size_t h = 0; h < loads.size() && h < hands_back.size(); ++h) {
    if (hands_back[h] && loads[h].owed > share) orders.push_back(HandBackOrder{h, share, loads[h].owed});
  }
  return orders;
}

StallWatch::Verdict StallWatch::look(bool full, std::uint64_t settled, bool handed_back,
                                     std::span<const HandlerLoad> loads, TimePoint now) {
  if (!full) {
    const bool was = stalled_;
    full_since_.reset();
    stalled_ = false;
    return Verdict{was ? Verdict::Kind::kRecovered : Verdict::Kind::kFine};
  }
  if (handed_back) return {};
  if (!full_since_ || settled != settled_when_full_) {
    full_since_ = now;
    settled_when_full_ = settled;
    return {};
  }
  if (now - *full_since_ < stall_after_ || loads.empty()) return {};
  std::size_t worst = 0;
  auto waiting = [&](std::size_t h) { return loads[h].owed - std::min(loads[h].owed, loads[h].in_flight); };
  for (std::size_t h = 1; h < loads.size(); ++h) {
    if (waiting(h) > waiting(worst) || (waiting(h) == waiting(worst) && loads[h].owed > loads[worst].owed)) {
      worst = h;
    }
  }
  const bool first = !stalled_;
  stalled_ = true;
  stalled_by_ = worst;
  return Verdict{Verdict::Kind::kStalled, worst, first};
}

}  // namespace jetfan
