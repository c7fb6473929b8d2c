#pragma once
// Exit statuses (sysexits.h) and the one exception jetfan uses: a failure at startup that jetfan
// itself will not wait out. It is caught in main, logged, and becomes the exit status. systemd's
// unit restarts jetfan after a delay for 69, 70 and 75, and not for 64, 77 and 78, which need a
// person to change something first (RestartPreventExitStatus=).

#include <stdexcept>
#include <string>

namespace jetfan {

inline constexpr int kExitOk = 0;
inline constexpr int kExitNotConsuming = 1;  // jetfan status: serving, but not consuming as the only reader
inline constexpr int kExitUsage = 64;        // EX_USAGE: bad command line
inline constexpr int kExitUnavailable = 69;  // EX_UNAVAILABLE: a resource jetfan needs is not there
inline constexpr int kExitSoftware = 70;     // EX_SOFTWARE: a bug
inline constexpr int kExitTempFail = 75;     // EX_TEMPFAIL: worth trying again later (JetStream not answering)
inline constexpr int kExitNoPerm = 77;       // EX_NOPERM: the NATS server refused our credentials
inline constexpr int kExitConfig = 78;       // EX_CONFIG: the config, or the consumer it names, is wrong
// Every status jetfan (but `jetfan exec`, exec_handler.hpp) exits with; its man page lists them all.
inline constexpr int kExitStatuses[] = {kExitOk,       kExitNotConsuming, kExitUsage,  kExitUnavailable,
                                        kExitSoftware, kExitTempFail,     kExitNoPerm, kExitConfig};

class StartupError : public std::runtime_error {
 public:
  StartupError(int exit_code, const std::string& message) : std::runtime_error(message), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

}  // namespace jetfan
