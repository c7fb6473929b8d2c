// DispatchCore, continued: deliveries lost on the way (docs/dispatch-rules.md R32-R35). Only
// what a lost delivery could be matters: a message the core holds or settled is safe whatever
// happened to one of its copies, so what is held back is what lies above the highest stream
// sequence first delivered before the jump, and only until those sequences are accounted for.

#include <algorithm>
#include <limits>

#include "dispatch_core.hpp"

namespace jetfan {

namespace {
// Beyond this many sequences to account for (a filtered consumer of a busy stream skips most of
// them), counting is given up for the proof by time.
constexpr std::uint64_t kMaxCounted = 65536;
}  // namespace

// The keepalive is a third of AckWait (config's kKeepalivesPerAckWait).
Duration gap_hold(Duration keepalive) { return 4 * keepalive; }
Duration gap_let_go(Duration keepalive) { return 9 * keepalive; }

void DispatchCore::bound(std::uint64_t consumer_seq, std::uint64_t stream_seq) {
  last_consumer_seq_ = consumer_seq;
  highest_first_delivered_ = std::max(highest_first_delivered_, stream_seq);
}

void DispatchCore::gap_check(const Arrival& arrival, TimePoint now) {
  if (arrival.consumer_seq == 0) return;
  const std::optional<std::uint64_t> before = last_consumer_seq_;
  last_consumer_seq_ = arrival.consumer_seq;
  if (!before || arrival.consumer_seq <= *before + 1) return;
  const std::uint64_t last = *before;
  ++counters_.delivery_gaps;
  counters_.deliveries_lost += arrival.consumer_seq - last - 1;
  if (!gap_) {
    gap_ = Gap{};
    gap_->floor = highest_first_delivered_;
  }
  Gap& gap = *gap_;
  // A jump while the last one's first first-delivery is still awaited widens that one's range.
  if (!gap.open_from) gap.open_from = highest_first_delivered_;
  gap.until = std::max(gap.until, now + gap_hold(settings_.keepalive));
  gap.let_go = std::max(gap.let_go, now + gap_let_go(settings_.keepalive));
  if (arrival.wall_ns != 0) {
    gap.until_wall_ns = std::max(
        gap.until_wall_ns,
        arrival.wall_ns + std::chrono::duration_cast<std::chrono::nanoseconds>(gap_hold(settings_.keepalive)).count());
  } else {
    gap.until_wall_ns = std::numeric_limits<std::int64_t>::max();
  }
}

void DispatchCore::gap_arrived(const Arrival& arrival, TimePoint now) {
  const std::uint64_t seq = arrival.stream_seq;
  const bool first = arrival.deliveries == 1 && !arrival.unroutable && seq != 0;
  if (first && seq > highest_first_delivered_) highest_first_delivered_ = seq;
  if (!gap_ || seq == 0) return;
  Gap& gap = *gap_;
  if (seq > gap.floor) gap.missing.erase(seq);
  if (gap.open_from && seq > *gap.open_from) {
    if (!first) {
      gap.early.insert(seq);
      if (gap.early.size() > kMaxCounted) gap.uncounted = true;
    } else {
      // The server first-delivers in stream order: every lost first delivery lies below this one.
      const std::uint64_t from = *gap.open_from;
      if (seq - from - 1 > kMaxCounted) {
        gap.uncounted = true;
      } else {
        for (std::uint64_t s = from + 1; s < seq; ++s) {
          if (!gap.early.count(s)) gap.missing.insert(s);
        }
      }
      gap.open_from.reset();
      gap.early.clear();
    }
  }
  if (!gap.open_from && gap.missing.empty() && !gap.uncounted) {
    gap_end(GapEnd::kBack, now);
    return;
  }
  // Stored after the proof time, so delivered after AckWait ran out for whatever was lost, which
  // the server sends first: it came on this connection before this one, or was lost again (a
  // second jump, checked before this).
  if (now >= gap.until && arrival.published_ns != 0 &&
      static_cast<std::int64_t>(arrival.published_ns) >= gap.until_wall_ns) {
    gap_end(GapEnd::kProof, now);
  }
}

void DispatchCore::heard(TimePoint asked_at, TimePoint now) {
  if (gap_ && now >= gap_->until && asked_at >= gap_->until) gap_end(GapEnd::kProof, now);
  if (restart_ && restart_->proof.by_answer(asked_at, now)) restart_end(now);
  if (floor_hold_ && floor_hold_->proof.by_answer(asked_at, now)) {
    floor_hold_.reset();
    advance_ack_floor();
  }
}

void DispatchCore::gap_tick(TimePoint now) {
  if (gap_ && now >= gap_->let_go) gap_end(GapEnd::kLetGo, now);
}

void DispatchCore::gap_end(GapEnd why, TimePoint now) {
  if (why == GapEnd::kLetGo) ++counters_.gap_holds_let_go;
  gap_.reset();
  advance_ack_floor();
  std::vector<bool> touched(handlers_.size(), false);
  release_gated(touched);
  for (std::size_t h = 0; h < touched.size(); ++h) {
    if (touched[h]) dispatch(h, now);
  }
}

}  // namespace jetfan
