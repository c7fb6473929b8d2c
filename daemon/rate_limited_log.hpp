#pragma once
// RateLimitedLog: warnings that may repeat (a handler timing out on every message, say), each kind
// logged at most `burst` times per `window` (core/log_rate_limiter.hpp), the rest counted; the
// count goes with the next line of that kind, or out on its own by report_suppressed() once the
// window has passed. So no failure goes unmentioned, and none floods the journal.
//
// Thread: one owner (the io_context thread).

#include <string>
#include <string_view>

#include "log_rate_limiter.hpp"
#include "logging.hpp"
#include "time.hpp"

namespace jetfan {

class RateLimitedLog {
 public:
  RateLimitedLog(std::size_t burst, Duration window) : limiter_(burst, window), window_(window) {}

  // Logs a warning of `kind` unless too many of that kind came lately.
  template <typename... Args>
  void warn(TimePoint now, const std::string& kind, std::string_view event, LogFields fields,
            fmt::format_string<Args...> format, Args&&... args) {
    const auto verdict = limiter_.allow(kind, now);
    if (verdict.log)
      write(verdict.suppressed_before, kind, event, fields, fmt::format(format, std::forward<Args>(args)...));
  }
  // Logs, for each kind whose window ended with lines held back, how many there were.
  void report_suppressed(TimePoint now);

 private:
  static void write(std::uint64_t suppressed_before, const std::string& kind, std::string_view event, LogFields fields,
                    std::string line);

  LogRateLimiter limiter_;
  Duration window_;
};

}  // namespace jetfan
