// DispatchCore, continued: pausing and resuming a handler. The rules are in the header.

#include "dispatch_core.hpp"

namespace jetfan {

void DispatchCore::set_paused(std::size_t handler, bool paused, TimePoint now) {
  Handler& h = handlers_[handler];
  if (h.limits.paused == paused) return;
  h.limits.paused = paused;
  settings_.handlers[handler].paused = paused;
  if (!paused) {
    dispatch(handler, now);
    return;
  }
  // As when its last instance goes: a message another recipient failed no longer waits for it.
  std::vector<std::uint64_t> waiting;
  for (const std::uint64_t seq : h.queue) {
    auto message = messages_.find(seq);
    if (message != messages_.end() && message->second.failed != 0 && message->second.in_flight == 0) {
      waiting.push_back(seq);
    }
  }
  for (const std::uint64_t seq : waiting) {
    if (messages_.count(seq)) maybe_finish(seq, now);
  }
}

}  // namespace jetfan
