#pragma once
// One command started with posix_spawn in a process group of its own, with pipes to its stdin,
// stdout and stderr (and perhaps one more descriptor it writes to), and a pidfd that becomes
// readable when it exits. No shell. The destructor
// kills what is left of the group (SIGKILL) and reaps the command, whatever happened before.
// Move-only; use one from one thread.

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "unique_fd.hpp"

namespace jetfan {

class ChildProcess {
 public:
  struct Spawned;
  // Starts argv[0] (looked up in PATH if it has no "/") with exactly `env`. With `extra_fd` (3 or
  // more), the command also gets the writing end of a pipe as that descriptor, whose reading end is
  // extra_out_fd(). Our ends of the pipes are non-blocking and close-on-exec; the command gets
  // default signal handling and an empty signal mask whatever this process has.
  static Spawned spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env, int extra_fd = -1);

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&&) = delete;
  ~ChildProcess();

  pid_t pid() const { return pid_; }
  int stdin_fd() const { return stdin_.get(); }
  int stdout_fd() const { return stdout_.get(); }
  int stderr_fd() const { return stderr_.get(); }
  int extra_out_fd() const { return extra_out_.get(); }  // -1 without spawn()'s extra_fd
  // Readable once the command has exited; -1 if the kernel has no pidfds (then poll try_reap()).
  int exit_fd() const { return exit_.get(); }
  void close_stdin() { stdin_.reset(); }
  void close_stdout() { stdout_.reset(); }
  void close_stderr() { stderr_.reset(); }
  void close_extra_out() { extra_out_.reset(); }

  // Sends `signal` to every process in the command's group (while the command is unreaped its
  // group id cannot be reused, so this never hits a stranger).
  void signal_group(int signal);

  // True once the command has exited; it stays unreaped (see signal_group()).
  bool has_exited() const;

  struct Exit {
    bool signaled = false;
    int code = 0;  // the exit status, or the signal number
  };
  // The command's exit if it has exited (reaping it), else nullopt. Once reaped, the same Exit.
  std::optional<Exit> try_reap();

 private:
  ChildProcess() = default;

  pid_t pid_ = -1;
  UniqueFd stdin_, stdout_, stderr_, extra_out_, exit_;
  std::optional<Exit> exit_status_;
};

struct ChildProcess::Spawned {
  std::optional<ChildProcess> child;
  std::string error;  // why it could not be started
};

}  // namespace jetfan
