#include "restart_wait.hpp"

#include <algorithm>

#include "delivery_gap.hpp"

namespace jetfan {

SentAgainProof SentAgainProof::after(const Outstanding& outstanding, Duration nak_delay_max, Duration keepalive,
                                     TimePoint now) {
  // gap_hold() leaves a third of AckWait beyond AckWait for the server's own timer.
  const Duration wait = nak_delay_max + gap_hold(keepalive);
  SentAgainProof proof;
  proof.at = now + wait;
  if (outstanding.wall_ns != 0) {
    proof.wall_ns = outstanding.wall_ns + std::chrono::duration_cast<std::chrono::nanoseconds>(wait).count();
  }
  return proof;
}

RestartWait::RestartWait(const Outstanding& outstanding, const SentAgainProof& proof)
    : floor_(outstanding.floor),
      delivered_(outstanding.delivered),
      pending_(outstanding.pending),
      unread_(outstanding.unread),
      until_(outstanding.until),
      proof_(proof) {}

bool RestartWait::arrived(std::uint64_t stream_seq) {
  if (!covers(stream_seq)) return false;
  away_.erase(stream_seq);  // in the gate still, as the arrival's own entry from now on
  back_.insert(stream_seq);
  return back_.size() >= pending_;
}

FloorHold::FloorHold(const Outstanding& outstanding, const SentAgainProof& proof, const FloorHold* before)
    : until_(std::max(outstanding.until, before ? before->until_ : TimePoint{})),
      floor_(outstanding.floor),
      delivered_(outstanding.delivered),
      pending_(outstanding.pending),
      proof_(proof) {}

bool FloorHold::arrived(std::uint64_t stream_seq) {
  if (stream_seq <= floor_ || stream_seq > delivered_) return false;
  back_.insert(stream_seq);
  return back_.size() >= pending_;
}

}  // namespace jetfan
