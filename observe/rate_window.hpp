#pragma once
// RateWindow: per-second rates of per-handler counts over the last `span`, from samples the owner
// takes now and then (once a second). Handlers are named, so a reload that moves or removes one
// keeps the others' rates. Pure: time comes in as values.
//
// Thread: one owner.

#include <array>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "dispatch_core.hpp"
#include "status_snapshot.hpp"
#include "time.hpp"

namespace jetfan {

class RateWindow {
 public:
  explicit RateWindow(Duration span) : span_(span) {}

  struct Named {
    std::string name;
    const HandlerStats* stats;
  };
  // A sample of every handler's counts at `at`. Samples older than the span (except the one that
  // begins it) are dropped.
  void add(TimePoint at, const std::vector<Named>& handlers);
  // Rates for `name`, from the oldest sample that has it to `current` at `now`; zero without one.
  HandlerRates rates(std::string_view name, const HandlerStats& current, TimePoint now) const;

 private:
  using Counts = std::array<std::uint64_t, 6>;
  static Counts counts_of(const HandlerStats& stats);
  struct Sample {
    TimePoint at;
    std::vector<std::pair<std::string, Counts>> handlers;
  };
  Duration span_;
  std::deque<Sample> samples_;
};

}  // namespace jetfan
