// DispatchCore and its RestartWait and FloorHold (restart_wait.hpp): after a restart
// (docs/dispatch-rules.md R26-R31). The messages an earlier reader may have left unacked enter the
// gate like messages handed back, so the gate's own rules keep later messages of their keys
// waiting; RestartWait decides when the waiting ends for those that do not come back, and this
// lets them go. Under AckPolicy all, FloorHold keeps the ack floor (AckFloor) from moving until the
// same ends.

#include "dispatch_core.hpp"

namespace jetfan {

void DispatchCore::expect_outstanding(const Outstanding& outstanding, TimePoint now) {
  if (restart_) restart_end(now);
  if (outstanding.pending == 0 || outstanding.delivered <= outstanding.floor) return;
  const SentAgainProof proof = SentAgainProof::after(outstanding, settings_.nak_delay_max, settings_.keepalive, now);
  if (settings_.ack_policy == AckPolicy::kAll) {
    FloorHold hold(outstanding, proof, floor_hold_ ? &*floor_hold_ : nullptr);
    floor_hold_ = std::move(hold);
  }
  RestartWait restart(outstanding, proof);
  for (const Outstanding::Entry& entry : outstanding.messages) {
    if (!restart.covers(entry.stream_seq)) continue;
    if (messages_.count(entry.stream_seq) || settled_.find(entry.stream_seq)) continue;
    bool added = false;
    for (const OrderKey& order : entry.order) {
      if (order.handler >= handlers_.size()) continue;
      gate_.add(order.handler, order.key, entry.stream_seq);
      added = true;
    }
    if (added) restart.away(entry.stream_seq);
  }
  counters_.order_restart_waits += restart.still_away().size();
  if (!restart.waits()) return;
  restart_ = std::move(restart);
}

void DispatchCore::restart_end(TimePoint now) {
  const RestartWait restart = std::move(*restart_);
  restart_.reset();
  std::vector<bool> touched(handlers_.size(), false);
  for (const std::uint64_t seq : restart.still_away()) {
    for (const auto& [handler, next] : gate_.forget(seq)) {
      order_release(handler, next);
      if (handler < touched.size()) touched[handler] = true;
    }
  }
  if (restart.holds_all()) {
    // Everything ordered waited; the oldest held of each key may go now, and the gate lets the rest
    // follow as those settle.
    release_gated(touched);
  }
  for (std::size_t h = 0; h < touched.size(); ++h) {
    if (touched[h]) dispatch(h, now);
  }
}

void DispatchCore::floor_hold_end() {
  floor_hold_.reset();
  advance_ack_floor();
}

}  // namespace jetfan
