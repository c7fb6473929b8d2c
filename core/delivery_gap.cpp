#include "delivery_gap.hpp"

#include <algorithm>
#include <limits>

namespace jetfan {

namespace {
// Beyond this many sequences to account for (a filtered consumer of a busy stream skips most of
// them), counting is given up for the proof by time.
constexpr std::uint64_t kMaxCounted = 65536;
}  // namespace

// The keepalive is a third of AckWait (config's kKeepalivesPerAckWait).
Duration gap_hold(Duration keepalive) { return 4 * keepalive; }
Duration gap_let_go(Duration keepalive) { return 9 * keepalive; }

void DeliveryGap::bound(std::uint64_t consumer_seq, std::uint64_t stream_seq) {
  last_consumer_seq_ = consumer_seq;
  highest_first_delivered_ = std::max(highest_first_delivered_, stream_seq);
}

std::uint64_t DeliveryGap::check(std::uint64_t consumer_seq, std::int64_t wall_ns, TimePoint now) {
  if (consumer_seq == 0) return 0;
  const std::optional<std::uint64_t> before = last_consumer_seq_;
  last_consumer_seq_ = consumer_seq;
  if (!before || consumer_seq <= *before + 1) return 0;
  if (!hold_) {
    hold_ = Hold{};
    hold_->floor = highest_first_delivered_;
  }
  Hold& hold = *hold_;
  // A jump while the last one's first first-delivery is still awaited widens that one's range.
  if (!hold.open_from) hold.open_from = highest_first_delivered_;
  hold.proof_from = std::max(hold.proof_from, now + gap_hold(keepalive_));
  hold.let_go = std::max(hold.let_go, now + gap_let_go(keepalive_));
  if (wall_ns != 0) {
    const std::int64_t wait_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(gap_hold(keepalive_)).count();
    hold.proof_from_wall_ns = std::max(hold.proof_from_wall_ns, wall_ns + wait_ns);
  } else {
    hold.proof_from_wall_ns = std::numeric_limits<std::int64_t>::max();
  }
  return consumer_seq - *before - 1;
}

std::optional<DeliveryGap::End> DeliveryGap::arrived(std::uint64_t stream_seq, bool first, std::uint64_t published_ns,
                                                     TimePoint now) {
  if (first && stream_seq > highest_first_delivered_) highest_first_delivered_ = stream_seq;
  if (!hold_ || stream_seq == 0) return std::nullopt;
  Hold& hold = *hold_;
  if (stream_seq > hold.floor) hold.missing.erase(stream_seq);
  if (hold.open_from && stream_seq > *hold.open_from) {
    if (!first) {
      hold.early.insert(stream_seq);
      if (hold.early.size() > kMaxCounted) hold.uncounted = true;
    } else {
      // The server first-delivers in stream order: every lost first delivery lies below this one.
      const std::uint64_t from = *hold.open_from;
      if (stream_seq - from - 1 > kMaxCounted) {
        hold.uncounted = true;
      } else {
        for (std::uint64_t s = from + 1; s < stream_seq; ++s) {
          if (!hold.early.count(s)) hold.missing.insert(s);
        }
      }
      hold.open_from.reset();
      hold.early.clear();
    }
  }
  if (!hold.open_from && hold.missing.empty() && !hold.uncounted) return end(End::kBack);
  // Stored after the proof time, so delivered after AckWait ran out for whatever was lost, which
  // the server sends first: it came on this connection before this one, or was lost again (a
  // second jump, checked before this).
  if (now >= hold.proof_from && published_ns != 0 &&
      static_cast<std::int64_t>(published_ns) >= hold.proof_from_wall_ns) {
    return end(End::kProof);
  }
  return std::nullopt;
}

std::optional<DeliveryGap::End> DeliveryGap::heard(TimePoint asked_at, TimePoint now) {
  if (hold_ && now >= hold_->proof_from && asked_at >= hold_->proof_from) return end(End::kProof);
  return std::nullopt;
}

std::optional<DeliveryGap::End> DeliveryGap::tick(TimePoint now) {
  if (hold_ && now >= hold_->let_go) return end(End::kLetGo);
  return std::nullopt;
}

std::optional<TimePoint> DeliveryGap::let_go_at() const {
  if (!hold_) return std::nullopt;
  return hold_->let_go;
}

std::optional<DeliveryGap::End> DeliveryGap::end(End why) {
  hold_.reset();
  return why;
}

}  // namespace jetfan
