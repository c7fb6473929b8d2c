#pragma once
// Exit statuses (sysexits.h) and the one exception jetfan uses: a failure at startup that
// waiting cannot fix. It is caught in main, logged, and becomes the exit status.

#include <stdexcept>
#include <string>

namespace jetfan {

inline constexpr int kExitOk = 0;
inline constexpr int kExitUsage = 64;        // EX_USAGE: bad command line
inline constexpr int kExitUnavailable = 69;  // EX_UNAVAILABLE: a resource jetfan needs is not there
inline constexpr int kExitSoftware = 70;     // EX_SOFTWARE: a bug
inline constexpr int kExitNoPerm = 77;       // EX_NOPERM: the NATS server refused our credentials
inline constexpr int kExitConfig = 78;       // EX_CONFIG: the config, or the consumer it names, is wrong

class StartupError : public std::runtime_error {
 public:
  StartupError(int exit_code, const std::string& message)
      : std::runtime_error(message), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

}  // namespace jetfan
