#pragma once
// LatencyHistogram: how long something took, counted into fixed buckets. Pure, fixed size: observing
// allocates nothing and costs a few comparisons, so it may sit on the per-message path.
//
// The bucket bounds are fixed for every histogram jetfan keeps (from 100µs to 60s), so that one
// metrics scrape can render them all alike, as Prometheus histograms with `le` bounds in seconds.
//
// Thread: one owner. Not thread-safe.

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>

namespace jetfan {

class LatencyHistogram {
 public:
  // Upper bounds of the buckets, in microseconds; a last bucket (+Inf) takes the rest.
  static constexpr std::array<std::int64_t, 18> kBoundsMicros = {
      100,     250,     500,     1'000,     2'500,     5'000,     10'000,     25'000,     50'000,
      100'000, 250'000, 500'000, 1'000'000, 2'500'000, 5'000'000, 10'000'000, 30'000'000, 60'000'000};
  static constexpr std::size_t kBuckets = kBoundsMicros.size() + 1;
  static constexpr std::array<std::int64_t, kBoundsMicros.size()> kBoundsNanos = [] {
    std::array<std::int64_t, kBoundsMicros.size()> nanos{};
    for (std::size_t i = 0; i < nanos.size(); ++i) nanos[i] = kBoundsMicros[i] * 1000;
    return nanos;
  }();

  // A negative value (a clock that went backwards) counts as zero.
  void observe(std::chrono::nanoseconds value) {
    const std::int64_t ns = value.count() < 0 ? 0 : value.count();
    const auto bucket =
        static_cast<std::size_t>(std::lower_bound(kBoundsNanos.begin(), kBoundsNanos.end(), ns) - kBoundsNanos.begin());
    ++counts_[bucket];
    ++count_;
    sum_ns_ += static_cast<std::uint64_t>(ns);
  }

  // Observations in bucket i alone (not cumulative); i == kBoundsMicros.size() is +Inf.
  std::uint64_t bucket(std::size_t i) const { return counts_[i]; }
  std::uint64_t count() const { return count_; }
  double sum_seconds() const { return static_cast<double>(sum_ns_) / 1e9; }

 private:
  std::array<std::uint64_t, kBuckets> counts_{};
  std::uint64_t count_ = 0;
  std::uint64_t sum_ns_ = 0;
};

}  // namespace jetfan
