#pragma once
// FullWatch: what jetfan does while it holds all it may (max_held, max_held_bytes) and so pulls no
// more. It hands back to the server, past their share, the backlog of handlers configured to
// (when_full: hand_back) and of ordered handlers jetfan itself holds back after a restart, a
// reconnect or a leader change (which are not slow, only waiting); and when nothing has settled for
// a while it names the handler that holds everyone up (core/full_policy.hpp decides both). It also
// warns of an ordered handler's key blocked for more than a few ack_timeouts. Every warning is
// rate-limited.
//
// Thread: the io_context thread only. `config`, `pull` and `warnings` must outlive it.

#include <cstddef>

#include "config.hpp"
#include "dispatch_core.hpp"
#include "full_policy.hpp"
#include "log_rate_limiter.hpp"
#include "pull_ledger.hpp"
#include "rate_limited_log.hpp"

namespace jetfan {

class FullWatch {
 public:
  FullWatch(const Config& config, const PullSettings& pull, RateLimitedLog& warnings);

  // One look, on every housekeeping turn and when a batch from the server made jetfan full. `full`:
  // what is held (held_for_room, `held_bytes`) is at a limit. Hand-backs are effects of `core`.
  void act(DispatchCore& core, bool full, std::size_t held_bytes, TimePoint now);
  // Warns of keys blocked for longer than a few of their handler's ack_timeout.
  void warn_blocked_keys(const DispatchCore& core, TimePoint now);

  // Who holds everyone up, and since when, while a stall lasts.
  const StallWatch& stall() const { return stall_; }

 private:
  const Config& config_;
  const PullSettings& pull_;
  RateLimitedLog& warnings_;
  StallWatch stall_;
  LogRateLimiter stall_warnings_;
  LogRateLimiter key_warnings_;  // per handler
};

}  // namespace jetfan
