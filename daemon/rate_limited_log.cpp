#include "rate_limited_log.hpp"

namespace jetfan {

void RateLimitedLog::write(std::uint64_t suppressed_before, const std::string& kind, std::string_view event,
                           LogFields fields, std::string line) {
  if (suppressed_before > 0) line += fmt::format(" ({} more like it were not logged: {})", suppressed_before, kind);
  write_event(spdlog::level::warn, event, fields, line);
}

void RateLimitedLog::report_suppressed(TimePoint now) {
  for (const auto& [kind, count] : limiter_.take_expired(now)) {
    log_warn("log.suppressed", {{"count", count}, {"kind", kind}},
             "{} more like the last warning were not logged in the last {}s: {}", count,
             std::chrono::duration_cast<std::chrono::seconds>(window_).count(), kind);
  }
}

}  // namespace jetfan
