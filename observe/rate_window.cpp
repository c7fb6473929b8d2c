#include "rate_window.hpp"

namespace jetfan {

RateWindow::Counts RateWindow::counts_of(const HandlerStats& s) {
  return {s.delivered, s.acked, s.termed, s.failed_nak, s.failed_timeout, s.failed_disconnect};
}

void RateWindow::add(TimePoint at, const std::vector<Named>& handlers) {
  Sample sample{at, {}};
  for (const auto& h : handlers) sample.handlers.emplace_back(h.name, counts_of(*h.stats));
  samples_.push_back(std::move(sample));
  // Keep one sample at or before the start of the span, so a rate always spans all of it.
  while (samples_.size() > 2 && samples_[1].at <= at - span_) samples_.pop_front();
}

HandlerRates RateWindow::rates(std::string_view name, const HandlerStats& current, TimePoint now) const {
  HandlerRates rates;
  for (const auto& sample : samples_) {
    for (const auto& entry : sample.handlers) {
      if (entry.first != name) continue;
      const auto& counts = entry.second;  // not a structured binding: the lambda below captures it
      const double seconds = std::chrono::duration<double>(now - sample.at).count();
      if (seconds <= 0) return rates;
      const Counts now_counts = counts_of(current);
      // A count below the sample's: the handler was removed and declared again; no rate.
      auto per_second = [&](std::size_t i) {
        return now_counts[i] >= counts[i] ? static_cast<double>(now_counts[i] - counts[i]) / seconds : 0.0;
      };
      rates.delivered = per_second(0);
      rates.acked = per_second(1);
      rates.termed = per_second(2);
      rates.failed_nak = per_second(3);
      rates.failed_timeout = per_second(4);
      rates.failed_disconnect = per_second(5);
      return rates;
    }
  }
  return rates;
}

}  // namespace jetfan
