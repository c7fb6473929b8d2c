#pragma once
// `jetfan exec`: turns any command into a handler (exec_usage() in exec_options.hpp says how).
//
// run_exec() is the whole program: it parses the words after "exec", connects to jetfan, runs the
// command for each message on up to --concurrency threads until SIGTERM or SIGINT, and returns the
// exit status. While it runs it blocks SIGTERM and SIGINT in the calling thread (reading them from
// a signalfd; threads it starts inherit the mask) and ignores SIGPIPE; it restores both before it
// returns. Call it from the main thread before starting other threads. Its own log and the
// commands' stderr go to stderr, the commands' stdout to stdout, one whole line per write.

#include <span>
#include <string>

namespace jetfan {

// run_exec's exit statuses (sysexits.h where one fits; a shell's for a command it cannot start).
inline constexpr int kExecStopped = 0;       // stopped by SIGTERM or SIGINT
inline constexpr int kExecUsage = 64;        // bad command line
inline constexpr int kExecUnavailable = 69;  // jetfan unreachable, or the connection lost
inline constexpr int kExecRefused = 76;      // jetfan refused the handler (ERR)
inline constexpr int kExecConfig = 78;       // bad --config, or it declares no such handler
inline constexpr int kExecCannotRun = 126;   // CMD is there but cannot be run
inline constexpr int kExecNotFound = 127;    // CMD is nowhere
inline constexpr int kExecExitStatuses[] = {kExecStopped, kExecUsage,     kExecUnavailable, kExecRefused,
                                            kExecConfig,  kExecCannotRun, kExecNotFound};

int run_exec(std::span<const std::string> args);

}  // namespace jetfan
