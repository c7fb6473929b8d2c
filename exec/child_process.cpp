#include "child_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace jetfan {
namespace {

struct Pipe {
  UniqueFd read, write;
};

std::optional<Pipe> make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return std::nullopt;
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

bool set_nonblocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  return flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

// posix_spawn's attributes and file actions, destroyed whatever happens.
struct SpawnSetup {
  posix_spawnattr_t attributes;
  posix_spawn_file_actions_t actions;
  SpawnSetup() {
    posix_spawnattr_init(&attributes);
    posix_spawn_file_actions_init(&actions);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;
};

}  // namespace

ChildProcess::Spawned ChildProcess::spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                                          int extra_fd) {
  if (argv.empty()) return {std::nullopt, "no command"};
  auto in = make_pipe(), out = make_pipe(), err = make_pipe();
  if (!in || !out || !err) return {std::nullopt, std::string("pipe2(): ") + std::strerror(errno)};
  std::optional<Pipe> extra;
  if (extra_fd >= 3) {
    extra = make_pipe();
    if (!extra) return {std::nullopt, std::string("pipe2(): ") + std::strerror(errno)};
    // dup2 onto itself would leave close-on-exec set: our end must not already be `extra_fd`.
    if (extra->write.get() == extra_fd) {
      UniqueFd moved(::fcntl(extra->write.get(), F_DUPFD_CLOEXEC, extra_fd + 1));
      if (!moved) return {std::nullopt, std::string("fcntl(F_DUPFD_CLOEXEC): ") + std::strerror(errno)};
      extra->write = std::move(moved);
    }
  }

  SpawnSetup setup;
  // Its own process group, so a timeout can kill everything it started; default signal handling
  // and no blocked signals, whatever jetfan exec uses for itself (it ignores SIGPIPE and blocks
  // SIGTERM and SIGINT).
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setflags(&setup.attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&setup.attributes, 0);
  posix_spawnattr_setsigmask(&setup.attributes, &none);
  posix_spawnattr_setsigdefault(&setup.attributes, &all);
  // dup2 clears close-on-exec on the copies; every other descriptor of ours stays behind.
  posix_spawn_file_actions_adddup2(&setup.actions, in->read.get(), 0);
  posix_spawn_file_actions_adddup2(&setup.actions, out->write.get(), 1);
  posix_spawn_file_actions_adddup2(&setup.actions, err->write.get(), 2);
  if (extra) posix_spawn_file_actions_adddup2(&setup.actions, extra->write.get(), extra_fd);

  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  ChildProcess child;
  const int error = ::posix_spawnp(&child.pid_, args[0], &setup.actions, &setup.attributes, args.data(), envp.data());
  if (error != 0) {
    child.pid_ = -1;
    return {std::nullopt, "cannot run " + argv[0] + ": " + std::strerror(error)};
  }
  child.stdin_ = std::move(in->write);
  child.stdout_ = std::move(out->read);
  child.stderr_ = std::move(err->read);
  if (extra) child.extra_out_ = std::move(extra->read);
  // Unreaped, the pid cannot be reused yet, so the pidfd names our child.
  // (The syscall itself: glibc 2.36's <sys/pidfd.h> declares pidfd_open without C linkage.)
  child.exit_ = UniqueFd(static_cast<int>(::syscall(SYS_pidfd_open, child.pid_, 0)));
  set_nonblocking(child.stdin_.get());
  set_nonblocking(child.stdout_.get());
  set_nonblocking(child.stderr_.get());
  if (child.extra_out_) set_nonblocking(child.extra_out_.get());
  return {std::move(child), {}};
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      stdin_(std::move(other.stdin_)),
      stdout_(std::move(other.stdout_)),
      stderr_(std::move(other.stderr_)),
      extra_out_(std::move(other.extra_out_)),
      exit_(std::move(other.exit_)),
      exit_status_(other.exit_status_) {}

ChildProcess::~ChildProcess() {
  if (pid_ <= 0 || exit_status_) return;
  signal_group(SIGKILL);
  int status;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
}

void ChildProcess::signal_group(int signal) {
  if (pid_ > 0 && !exit_status_) ::kill(-pid_, signal);
}

bool ChildProcess::has_exited() const {
  if (exit_status_) return true;
  siginfo_t info{};
  int result;
  do {
    result = ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT);
  } while (result < 0 && errno == EINTR);
  return result == 0 && info.si_pid == pid_;
}

std::optional<ChildProcess::Exit> ChildProcess::try_reap() {
  if (exit_status_ || pid_ <= 0) return exit_status_;
  int status = 0;
  pid_t got;
  do {
    got = ::waitpid(pid_, &status, WNOHANG);
  } while (got < 0 && errno == EINTR);
  if (got != pid_) return std::nullopt;
  exit_status_ = WIFSIGNALED(status) ? Exit{true, WTERMSIG(status)} : Exit{false, WEXITSTATUS(status)};
  return exit_status_;
}

}  // namespace jetfan
