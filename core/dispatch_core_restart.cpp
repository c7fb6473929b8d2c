// DispatchCore, continued: ordered handlers after a restart (docs/dispatch-rules.md R26-R31).
// The messages an earlier reader may have left unacked enter the gate like messages handed back, so
// the gate's own rules keep later messages of their keys waiting; what is here only decides when
// the waiting ends for those that do not come back.

#include "dispatch_core.hpp"

#include <algorithm>
#include <limits>

namespace jetfan {

DispatchCore::SentAgainProof DispatchCore::sent_again_proof(const Outstanding& outstanding, TimePoint now) const {
  // Everything the server held was due again by then: what was in flight after AckWait, what was
  // handed back after its delay (at most nak_delay_max). gap_hold() leaves a third of AckWait for
  // the server's own timer.
  const Duration wait = settings_.nak_delay_max + gap_hold(settings_.keepalive);
  SentAgainProof proof;
  proof.at = now + wait;
  if (outstanding.wall_ns != 0) {
    proof.wall_ns = outstanding.wall_ns + std::chrono::duration_cast<std::chrono::nanoseconds>(wait).count();
  }
  return proof;
}

void DispatchCore::outstanding_proved(const Arrival& arrival, TimePoint now) {
  if (restart_ && restart_->proof.by_store(arrival.published_ns, now)) restart_end(now);
  if (floor_hold_ && floor_hold_->proof.by_store(arrival.published_ns, now)) {
    floor_hold_.reset();
    advance_ack_floor();
  }
}

void DispatchCore::expect_outstanding(const Outstanding& outstanding, TimePoint now) {
  if (restart_) restart_end(now);
  if (outstanding.pending == 0 || outstanding.delivered <= outstanding.floor) return;
  const SentAgainProof proof = sent_again_proof(outstanding, now);
  if (settings_.ack_policy == AckPolicy::kAll) {
    const bool timed = floor_hold_ && !floor_hold_->counting;
    FloorHold hold;
    hold.until = std::max(outstanding.until, floor_hold_ ? floor_hold_->until : TimePoint{});
    hold.proof = proof;
    hold.counting = !timed;
    hold.floor = outstanding.floor;
    hold.delivered = outstanding.delivered;
    hold.pending = outstanding.pending;
    floor_hold_ = std::move(hold);
  }
  Restart restart;
  restart.floor = outstanding.floor;
  restart.delivered = outstanding.delivered;
  restart.pending = outstanding.pending;
  restart.unread = outstanding.unread;
  restart.until = outstanding.until;
  restart.proof = proof;
  for (const Outstanding::Entry& entry : outstanding.messages) {
    if (entry.stream_seq <= restart.floor || entry.stream_seq > restart.delivered) continue;
    if (messages_.count(entry.stream_seq) || settled_.find(entry.stream_seq)) continue;
    bool added = false;
    for (const OrderKey& order : entry.order) {
      if (order.handler >= handlers_.size()) continue;
      gate_.add(order.handler, order.key, entry.stream_seq);
      added = true;
    }
    if (added) restart.away.insert(entry.stream_seq);
  }
  counters_.order_restart_waits += restart.away.size();
  if (restart.away.empty() && !restart.unread) return;
  restart_ = std::move(restart);
}

bool DispatchCore::restart_arrived(std::uint64_t stream_seq) {
  Restart& restart = *restart_;
  if (stream_seq <= restart.floor || stream_seq > restart.delivered) return false;
  restart.away.erase(stream_seq);  // in the gate still, as the arrival's own entry from now on
  restart.back.insert(stream_seq);
  return restart.back.size() >= restart.pending;
}

void DispatchCore::restart_end(TimePoint now) {
  const Restart restart = std::move(*restart_);
  restart_.reset();
  std::vector<bool> touched(handlers_.size(), false);
  for (const std::uint64_t seq : restart.away) {
    for (const auto& [handler, next] : gate_.forget(seq)) {
      order_release(handler, next);
      if (handler < touched.size()) touched[handler] = true;
    }
  }
  if (restart.unread) {
    // Everything ordered waited; the oldest held of each key may go now, and the gate lets the rest
    // follow as those settle.
    release_gated(touched);
  }
  for (std::size_t h = 0; h < touched.size(); ++h) {
    if (touched[h]) dispatch(h, now);
  }
}

}  // namespace jetfan
