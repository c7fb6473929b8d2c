#include "command_runner.hpp"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include "child_process.hpp"
#include "output_lines.hpp"

namespace jetfan {
namespace {

using Clock = std::chrono::steady_clock;

// Reads what `fd` has now into `lines` (OutputLines, WholeLines). false: the stream ended (or
// failed) and `fd` is closed.
template <typename Lines>
bool read_available(ChildProcess& child, int fd, Lines& lines) {
  char buffer[16 * 1024];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n > 0) {
      lines.append(std::string_view(buffer, static_cast<std::size_t>(n)));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    lines.finish();
    if (fd == child.stdout_fd()) {
      child.close_stdout();
    } else if (fd == child.stderr_fd()) {
      child.close_stderr();
    } else {
      child.close_extra_out();
    }
    return false;
  }
}

int millis_until(Clock::time_point when, Clock::time_point now) {
  if (when <= now) return 0;
  return static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(when - now).count());
}

}  // namespace

CommandResult run_command(const CommandSpec& spec, const CommandCallbacks& callbacks) {
  const auto started = Clock::now();
  CommandResult result;
  auto spawned = ChildProcess::spawn(spec.argv, spec.env, spec.publish_fd);
  if (!spawned.child) {
    result.error = spawned.error;
    return result;
  }
  ChildProcess& child = *spawned.child;
  OutputLines out(callbacks.stdout_line), err(callbacks.stderr_line);
  WholeLines publishes(callbacks.publish_line, spec.max_publish_line);
  std::string_view input = spec.input;
  if (input.empty()) child.close_stdin();

  auto next_wip = started + spec.wip_every;
  std::optional<Clock::time_point> deadline;
  if (spec.timeout) deadline = started + *spec.timeout;
  std::optional<Clock::time_point> kill_at;  // set once SIGTERM was sent
  bool timed_out = false, cancelled = false;
  std::optional<ChildProcess::Exit> exit;

  while (!exit) {
    pollfd fds[6];
    nfds_t count = 0;
    auto watch = [&](int fd, short events) {
      if (fd >= 0) fds[count++] = {fd, events, 0};
    };
    watch(child.stdin_fd(), POLLOUT);
    watch(child.stdout_fd(), POLLIN);
    watch(child.stderr_fd(), POLLIN);
    watch(child.extra_out_fd(), POLLIN);
    watch(child.exit_fd(), POLLIN);
    if (!kill_at) watch(spec.cancel_fd, POLLIN);

    auto now = Clock::now();
    // While it runs: the next WIP or its deadline; while it is being killed: the SIGKILL.
    Clock::time_point wake = kill_at ? *kill_at : next_wip;
    if (!kill_at && deadline) wake = std::min(wake, *deadline);
    int timeout = millis_until(wake, now);
    if (child.exit_fd() < 0) timeout = std::min(timeout, 20);  // no pidfd: look for the exit now and then
    if (::poll(fds, count, timeout) < 0 && errno != EINTR) break;

    for (nfds_t i = 0; i < count; ++i) {
      if (fds[i].revents == 0) continue;
      const int fd = fds[i].fd;
      if (fd == child.stdin_fd()) {
        const ssize_t n = ::write(fd, input.data(), input.size());
        if (n > 0) input.remove_prefix(static_cast<std::size_t>(n));
        // Written, or the command will not read it (EPIPE): either way it gets end of input.
        if (input.empty() || (n < 0 && errno != EAGAIN && errno != EINTR)) child.close_stdin();
      } else if (fd == child.stdout_fd()) {
        read_available(child, fd, out);
      } else if (fd == child.stderr_fd()) {
        read_available(child, fd, err);
      } else if (fd == child.extra_out_fd()) {
        read_available(child, fd, publishes);
      } else if (fd == spec.cancel_fd && !kill_at) {
        cancelled = true;
        child.signal_group(SIGTERM);
        kill_at = Clock::now() + spec.kill_grace;
      }
    }

    now = Clock::now();
    if (kill_at && now >= *kill_at) {
      child.signal_group(SIGKILL);
      kill_at = now + std::chrono::hours(24);  // once
    } else if (!kill_at && deadline && now >= *deadline) {
      timed_out = true;
      child.signal_group(SIGTERM);
      kill_at = now + spec.kill_grace;
    }
    if (!kill_at && now >= next_wip) {
      if (callbacks.wip) callbacks.wip();
      next_wip = now + spec.wip_every;
    }
    if (child.has_exited()) {
      // A command being killed takes what it left in its group along, before the reap frees the
      // group's id.
      if (kill_at) child.signal_group(SIGKILL);
      exit = child.try_reap();
    }
  }
  // It has exited. Its output written before that is in the pipes: take it, but do not wait for
  // the end of the streams, which something it left running may hold open.
  if (child.stdout_fd() >= 0) read_available(child, child.stdout_fd(), out);
  if (child.stderr_fd() >= 0) read_available(child, child.stderr_fd(), err);
  if (child.extra_out_fd() >= 0) read_available(child, child.extra_out_fd(), publishes);
  out.finish();
  err.finish();
  publishes.finish();

  result.took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
  result.last_stderr_line = err.last_line();
  if (!exit) {
    result.error = "poll() failed";
    return result;
  }
  if (timed_out) {
    result.kind = CommandResult::Kind::kTimedOut;
  } else if (cancelled) {
    result.kind = CommandResult::Kind::kCancelled;
  } else {
    result.kind = exit->signaled ? CommandResult::Kind::kSignaled : CommandResult::Kind::kExited;
  }
  result.code = exit->code;
  return result;
}

}  // namespace jetfan
