#pragma once
// AdaptiveLimit: how many deliveries one handler connection may have unconfirmed, when its handler
// has `adaptive_inflight`. The limit moves between a floor (handlers[].min_inflight) and a ceiling
// (max_inflight), following what the handler can take:
//
//   - Growth: a confirmation (ACK or TERM) that came back while the connection was using its whole
//     limit adds 1 to it until the first cut (slow start: it doubles per round), and 1/limit after
//     (about 1 per round). A connection that does not use its limit does not grow it.
//   - Cut on a NAK (x0.7) or an ack_timeout (x0.5): the handler said, or showed, it cannot keep up.
//   - Cut on rising latency (x0.7): the recent latency (an average of the confirmations since the
//     last cut, the latest weighing most) rose above 1.5 times the baseline plus 1 ms. The baseline
//     is the lowest latency of one confirmation over the last 10 to 20 s (two windows of 10 s): what
//     the handler takes when nothing waits inside it. A queue inside the handler cannot become the
//     baseline, since each cut brings the limit back to where nothing waits; a handler whose
//     latency rises for good (a slower database, not a fuller one) is cut down to the floor, and
//     what it takes there is the baseline 10 to 20 s later, when it grows again. A delivery the
//     handler kept alive with WIP says nothing about latency: it told jetfan it takes long.
//   - One cut per round: after a cut, neither cuts nor growth until as many confirmations came back
//     as were in flight at the cut; those were sent under the old limit, and cutting again for them
//     would count one overload many times. The recent average starts again after them.
//
// Without adaptive_inflight the limit is the ceiling, always, and every call is a no-op. Pure: time
// comes in as values. Thread: its owner's (the DispatchCore's).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "time.hpp"

namespace jetfan {

class AdaptiveLimit {
 public:
  enum class Cut { kNak, kTimeout, kLatency };
  static constexpr std::size_t kCauses = 3;

  // Fixed at `ceiling`. Precondition: ceiling >= 1.
  explicit AdaptiveLimit(std::uint32_t ceiling);
  // Adaptive, starting at the floor. Preconditions: 1 <= floor <= ceiling.
  AdaptiveLimit(std::uint32_t floor, std::uint32_t ceiling);

  bool adaptive() const { return adaptive_; }
  std::uint32_t limit() const { return static_cast<std::uint32_t>(limit_); }
  std::uint32_t floor() const { return floor_; }
  std::uint32_t ceiling() const { return ceiling_; }

  // A delivery was ACKed or TERMed `latency` after it was sent; `in_flight` deliveries were
  // unconfirmed on the connection just before, this one included. `kept_alive`: it had a WIP.
  // Both return the cause when they cut the limit.
  std::optional<Cut> confirmed(std::chrono::nanoseconds latency, std::size_t in_flight, bool kept_alive, TimePoint now);
  // A delivery failed by its NAK or its ack_timeout; `in_flight` as above.
  std::optional<Cut> failed(Cut cause, std::size_t in_flight, TimePoint now);

  // Cuts made for `cause`, and the last one's cause and time.
  std::uint64_t cuts(Cut cause) const { return cuts_[static_cast<std::size_t>(cause)]; }
  std::optional<Cut> last_cut() const { return last_cut_; }
  TimePoint last_cut_at() const { return last_cut_at_; }
  // The recent latency and its baseline, 0 before the first sample.
  std::chrono::nanoseconds recent_latency() const {
    return std::chrono::nanoseconds(static_cast<std::int64_t>(recent_));
  }
  std::chrono::nanoseconds baseline_latency() const {
    return std::chrono::nanoseconds(static_cast<std::int64_t>(baseline()));
  }

 private:
  std::optional<Cut> cut(Cut cause, double factor, std::size_t still_out, TimePoint now);
  double baseline() const;
  void observe_baseline(double sample, TimePoint now);

  bool adaptive_ = false;
  std::uint32_t floor_;
  std::uint32_t ceiling_;
  double limit_;
  bool slow_start_ = true;
  std::size_t quiet_ = 0;    // confirmations still to come back from before the last cut
  double recent_ = 0;        // nanoseconds, an exponential average; 0: no sample since the last cut
  std::size_t samples_ = 0;  // samples in recent_
  // The lowest latency of one confirmation in the previous and in the current window (0: none), and
  // when the current one began.
  double window_min_[2] = {0, 0};
  std::optional<TimePoint> window_start_;
  std::uint64_t cuts_[kCauses] = {0, 0, 0};
  std::optional<Cut> last_cut_;
  TimePoint last_cut_at_{};
};

// The config's and status's word for a cause: "nak", "timeout", "latency".
const char* cut_name(AdaptiveLimit::Cut cause);

}  // namespace jetfan
