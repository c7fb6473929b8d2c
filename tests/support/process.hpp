#pragma once
// Test support: real child processes. A Process is started with posix_spawn, its stdout and stderr
// go to files, and it is killed (SIGKILL) and reaped when the object goes, whatever the test did.

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace jetfan::testing {

// What a child gets beyond its argv: more environment variables ("NAME=value"), and descriptors of
// the parent to hand over as the child's own (parent fd -> child fd), as systemd does with sockets.
struct SpawnExtras {
  std::vector<std::string> env;
  std::vector<std::pair<int, int>> fds;
};

class Process {
 public:
  // Starts argv[0] (looked up in PATH) with stdout to `out_file` and stderr to `err_file`
  // (the same file if err_file is empty).
  Process(std::vector<std::string> argv, const std::string& out_file, const std::string& err_file = "",
          const SpawnExtras& extras = {});
  Process(Process&& other) noexcept;
  Process& operator=(Process&&) = delete;
  ~Process();

  pid_t pid() const { return pid_; }
  void signal(int signal);
  // Waits for it to exit; its exit status (128+N for signal N), or nullopt on timeout.
  std::optional<int> wait(std::chrono::milliseconds timeout);
  bool running();
  void kill_now();

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
};

// Polls `condition` every few milliseconds until it is true or `timeout` passes.
template <typename Condition>
bool wait_until(Condition condition, std::chrono::milliseconds timeout = std::chrono::seconds(20));

std::string read_file(const std::string& path);
// Runs the jetfan binary with `args` in `dir` to its end (at most 20 s), its stdout and stderr into
// `output`; its exit status, or -1 if it did not end in time.
int run_jetfan(const std::vector<std::string>& args, const std::string& dir, std::string& output);
std::size_t count_lines_containing(const std::string& text, const std::string& part);

}  // namespace jetfan::testing

#include <thread>

namespace jetfan::testing {
template <typename Condition>
bool wait_until(Condition condition, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (condition()) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}
}  // namespace jetfan::testing
