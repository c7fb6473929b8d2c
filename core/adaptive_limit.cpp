#include "adaptive_limit.hpp"

#include <algorithm>
#include <cassert>

namespace jetfan {

namespace {
// Small enough that one slow confirmation among fast ones moves the average less than the margin
// below; large enough that a queue growing in the handler is cut within a round or two.
constexpr double kRecentWeight = 1.0 / 8;
constexpr double kRise = 1.5;           // recent latency above kRise x baseline + kSlack cuts
constexpr double kSlackNs = 1'000'000;  // 1 ms: a local handler's scheduling noise is not overload
// Long enough to span many cuts, so that the baseline is a moment with nothing queued in the
// handler; short enough that a lasting change of its latency is learnt within 20 s.
constexpr std::chrono::seconds kWindow{10};
constexpr std::size_t kSamplesBeforeCut = 4;
constexpr double kNakFactor = 0.7;
constexpr double kTimeoutFactor = 0.5;
constexpr double kLatencyFactor = 0.7;
}  // namespace

const char* cut_name(AdaptiveLimit::Cut cause) {
  switch (cause) {
    case AdaptiveLimit::Cut::kNak:
      return "nak";
    case AdaptiveLimit::Cut::kTimeout:
      return "timeout";
    case AdaptiveLimit::Cut::kLatency:
      return "latency";
  }
  return "?";
}

AdaptiveLimit::AdaptiveLimit(std::uint32_t ceiling) : floor_(ceiling), ceiling_(ceiling), limit_(ceiling) {
  assert(ceiling >= 1);
}

AdaptiveLimit::AdaptiveLimit(std::uint32_t floor, std::uint32_t ceiling)
    : adaptive_(true), floor_(floor), ceiling_(ceiling), limit_(floor) {
  assert(floor >= 1 && floor <= ceiling);
}

double AdaptiveLimit::baseline() const {
  // 0 stands for a window without samples.
  if (window_min_[0] == 0) return window_min_[1];
  if (window_min_[1] == 0) return window_min_[0];
  return std::min(window_min_[0], window_min_[1]);
}

void AdaptiveLimit::observe_baseline(double sample, TimePoint now) {
  if (!window_start_) window_start_ = now;
  if (now - *window_start_ >= kWindow) {
    // Two windows or more without a sample (an idle handler) leave nothing worth remembering.
    window_min_[0] = now - *window_start_ >= 2 * kWindow ? 0 : window_min_[1];
    window_min_[1] = 0;
    window_start_ = now;
  }
  window_min_[1] = window_min_[1] == 0 ? sample : std::min(window_min_[1], sample);
}

std::optional<AdaptiveLimit::Cut> AdaptiveLimit::confirmed(std::chrono::nanoseconds latency, std::size_t in_flight,
                                                           bool kept_alive, TimePoint now) {
  if (!adaptive_) return std::nullopt;
  const auto sample = static_cast<double>(std::max<std::int64_t>(latency.count(), 1));
  // One confirmation's latency bounds the baseline even when it was sent before a cut.
  if (!kept_alive) observe_baseline(sample, now);
  if (quiet_ > 0) {
    --quiet_;
    return std::nullopt;
  }
  if (!kept_alive) {
    recent_ = recent_ == 0 ? sample : recent_ + kRecentWeight * (sample - recent_);
    ++samples_;
    if (samples_ >= kSamplesBeforeCut && recent_ > kRise * baseline() + kSlackNs) {
      return cut(Cut::kLatency, kLatencyFactor, in_flight - 1, now);
    }
  }
  // A connection the limit did not hold back gives no evidence that it can take more.
  if (in_flight >= limit()) limit_ = std::min<double>(ceiling_, limit_ + (slow_start_ ? 1.0 : 1.0 / limit_));
  return std::nullopt;
}

std::optional<AdaptiveLimit::Cut> AdaptiveLimit::failed(Cut cause, std::size_t in_flight, TimePoint now) {
  if (!adaptive_) return std::nullopt;
  if (quiet_ > 0) {
    --quiet_;
    return std::nullopt;
  }
  return cut(cause, cause == Cut::kTimeout ? kTimeoutFactor : kNakFactor, in_flight - 1, now);
}

std::optional<AdaptiveLimit::Cut> AdaptiveLimit::cut(Cut cause, double factor, std::size_t still_out, TimePoint now) {
  slow_start_ = false;
  quiet_ = still_out;
  // The average starts again after the quiet round: what came back before it was sent under the old
  // limit, and keeping its average would cut again for the same overload.
  recent_ = 0;
  samples_ = 0;
  if (limit() == floor_) return std::nullopt;  // nothing to cut: not counted, as no limit changed
  limit_ = std::max<double>(floor_, limit_ * factor);
  ++cuts_[static_cast<std::size_t>(cause)];
  last_cut_ = cause;
  last_cut_at_ = now;
  return cause;
}

}  // namespace jetfan
