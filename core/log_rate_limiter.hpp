#pragma once
// LogRateLimiter: keeps a repeated warning from flooding the journal. Pure; time comes in.
//
// Per key (say, "handler builder timed out"), the first `burst` lines of each `window` are let
// through; the rest are counted. The count is reported with the next line let through for that
// key, or by take_expired() once the window has passed with nothing more, so no failure goes
// unmentioned however many there are.
//
// Memory: one entry per key seen in the last window.
// Thread: one owner. Not thread-safe.

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "time.hpp"

namespace jetfan {

class LogRateLimiter {
 public:
  LogRateLimiter(std::size_t burst, Duration window) : burst_(burst), window_(window) {}

  struct Verdict {
    bool log = false;
    std::uint64_t suppressed_before = 0;  // lines of this key held back since the last one logged
  };
  Verdict allow(const std::string& key, TimePoint now);

  // Keys whose window has passed with lines held back, and how many; they are reset.
  std::vector<std::pair<std::string, std::uint64_t>> take_expired(TimePoint now);

 private:
  struct Entry {
    TimePoint window_start;
    std::size_t logged = 0;
    std::uint64_t suppressed = 0;
  };
  std::size_t burst_;
  Duration window_;
  std::unordered_map<std::string, Entry> entries_;
};

}  // namespace jetfan
