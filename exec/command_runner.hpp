#pragma once
// Runs one command for one delivery, the way `jetfan exec` does: the payload on its stdin, its
// output passed on line by line (and the lines it writes to its publish descriptor, when it has
// one), a WIP callback every so often while it runs, killed with its whole process group when it
// outlives its timeout or when cancelled. Blocks the calling thread until the command has exited
// and been reaped; many may run at once on different threads.

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace jetfan {

struct CommandSpec {
  std::vector<std::string> argv;
  std::vector<std::string> env;  // "NAME=value", exactly what the command gets
  std::string_view input;        // written to its stdin, which is then closed
  std::optional<std::chrono::milliseconds> timeout;
  std::chrono::milliseconds wip_every{10000};
  std::chrono::milliseconds kill_grace{2000};  // from SIGTERM to SIGKILL
  int cancel_fd = -1;                          // readable: kill the command as on a timeout
  // 3 or more: the command gets a pipe as this descriptor, its lines passed to publish_line.
  int publish_fd = -1;
  std::size_t max_publish_line = 0;  // longer lines are passed on cut, flagged too long
};

struct CommandCallbacks {
  std::function<void()> wip;                          // the command is still running
  std::function<void(std::string_view)> stdout_line;  // one line, without its line end
  std::function<void(std::string_view)> stderr_line;
  // A line the command wrote to its publish descriptor, exactly (WholeLines).
  std::function<void(std::string_view line, bool too_long)> publish_line;
};

struct CommandResult {
  enum class Kind { kExited, kSignaled, kTimedOut, kCancelled, kNotStarted };
  Kind kind = Kind::kNotStarted;
  int code = 0;                  // kExited: exit status; kSignaled: the signal
  std::string last_stderr_line;  // the last non-blank line it wrote to stderr
  std::string error;             // kNotStarted: why
  std::chrono::milliseconds took{0};
};

CommandResult run_command(const CommandSpec& spec, const CommandCallbacks& callbacks);

}  // namespace jetfan
