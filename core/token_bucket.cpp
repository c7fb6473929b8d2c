#include "token_bucket.hpp"

#include <algorithm>
#include <cassert>
#include <charconv>
#include <cmath>

namespace jetfan {

std::string rate_text(double max_rate) {
  if (max_rate <= 0) return "none";
  char text[32];
  const auto [end, ec] = std::to_chars(text, text + sizeof text, max_rate);
  return ec == std::errc() ? std::string(text, end) : "?";
}

TokenBucket::TokenBucket(double rate, double burst) : rate_(rate), burst_(burst), tokens_(burst) {
  assert(rate > 0 && burst >= 1);
}

double TokenBucket::burst_for(double rate) { return std::max(1.0, std::floor(rate / 10)); }

bool TokenBucket::ready(TimePoint now) {
  if (!limited()) return true;
  if (at_ && now > *at_) {
    tokens_ = std::min(burst_, tokens_ + std::chrono::duration<double>(now - *at_).count() * rate_);
  }
  if (!at_ || now > *at_) at_ = now;
  return tokens_ >= 1;
}

std::optional<TimePoint> TokenBucket::next_token() const {
  if (!limited()) return std::nullopt;
  if (!at_ || tokens_ >= 1) return at_;
  // Rounded up to the core's millisecond, so that the wakeup finds the token whole; at most a day
  // (and at least 1 ms), so that no rate, however small, can make a time the clock cannot hold.
  const double seconds = std::clamp((1 - tokens_) / rate_, 0.001, 86'400.0);
  return *at_ + std::chrono::ceil<Duration>(std::chrono::duration<double>(seconds));
}

}  // namespace jetfan
