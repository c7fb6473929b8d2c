#pragma once
// TokenBucket: a handler's max_rate. At most `rate` deliveries a second on average, and at most
// `burst` at once after a quiet spell: the bucket holds up to `burst` tokens, gains `rate` a second,
// and each delivery takes one. Pure: time comes in as values (core/time.hpp). A default-made bucket
// is unlimited.
//
// Thread: its owner's (the DispatchCore's).

#include <optional>
#include <string>

#include "time.hpp"

namespace jetfan {

// handlers[].max_rate as the config file spells it, for the config, status and reloads alike: the
// shortest number that reads back the same ("20", "0.5"); "none" for 0 (no limit).
std::string rate_text(double max_rate);

class TokenBucket {
 public:
  TokenBucket() = default;
  // Full at first. Preconditions: rate > 0 (the config's floor is 0.001), burst >= 1.
  TokenBucket(double rate, double burst);

  // The burst for a rate: a tenth of a second's worth, at least 1; so a rate of 20/s sends at most 2
  // at once and 10,000/s needs a wakeup at most every 100 ms.
  static double burst_for(double rate);

  bool limited() const { return rate_ > 0; }
  double rate() const { return rate_; }
  // Whether a delivery may go at `now` (not before the last call's `now`).
  bool ready(TimePoint now);
  // Takes the token ready() said was there.
  void take() { tokens_ -= 1; }
  // When the next token is whole, for a bucket that was not ready(), at most a day on; nullopt when
  // unlimited.
  std::optional<TimePoint> next_token() const;

 private:
  double rate_ = 0;  // tokens a second; 0: unlimited
  double burst_ = 0;
  double tokens_ = 0;
  std::optional<TimePoint> at_;  // when tokens_ was right; none yet: full
};

}  // namespace jetfan
