#include "exec_handler.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>

#include "command_runner.hpp"
#include "config.hpp"
#include "exec_environment.hpp"
#include "exec_options.hpp"
#include "handler_client.hpp"
#include "publish_line.hpp"
#include "unique_fd.hpp"

extern char** environ;

namespace jetfan {
namespace {

constexpr int kTermStatus = 100;

// Whole lines to one descriptor from many threads, each line in one write() so none interleave.
class LineLog {
 public:
  explicit LineLog(int fd) : fd_(fd) {}
  void write(std::string_view prefix, std::string_view line) {
    std::string text;
    text.reserve(prefix.size() + line.size() + 1);
    text.append(prefix).append(line).push_back('\n');
    std::lock_guard lock(mutex_);
    for (std::size_t done = 0; done < text.size();) {
      const ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // nowhere to log to; the messages are still confirmed
      done += static_cast<std::size_t>(n);
    }
  }

 private:
  std::mutex mutex_;
  int fd_;
};

// Finds a command as posix_spawnp will: a path with "/" as is, else in $PATH. Like a shell, it tells
// a command that is nowhere (127) from one that is there but cannot be run (126).
struct CommandLookup {
  int exit_status = 0;  // 0: found and runnable
  std::string problem;  // else what is wrong, for a person
};

CommandLookup look_up_command(const std::string& command) {
  std::string unrunnable;  // the first file found that cannot be run, as a shell reports it
  auto runnable = [&](const std::string& path) {
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0) return false;
    if (S_ISREG(info.st_mode) && ::access(path.c_str(), X_OK) == 0) return true;
    if (unrunnable.empty()) unrunnable = path + (S_ISDIR(info.st_mode) ? " is a directory" : " is not executable");
    return false;
  };
  const bool with_path = command.find('/') != std::string::npos;
  if (with_path && runnable(command)) return {};
  if (!with_path) {
    const char* path = std::getenv("PATH");
    std::string_view dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
    while (true) {
      const auto colon = dirs.find(':');
      const std::string dir(dirs.substr(0, colon));
      if (runnable((dir.empty() ? "." : dir) + "/" + command)) return {};
      if (colon == std::string_view::npos) break;
      dirs.remove_prefix(colon + 1);
    }
  }
  if (!unrunnable.empty()) return {kExecCannotRun, "cannot run \"" + command + "\": " + unrunnable};
  return {kExecNotFound, "cannot run \"" + command + "\": no such executable file" + (with_path ? "" : " in $PATH")};
}

// SIGTERM and SIGINT, blocked and read from a signalfd for as long as it lives; SIGPIPE ignored.
class StopSignals {
 public:
  StopSignals() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGTERM);
    sigaddset(&set_, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set_, &old_mask_);
    fd_ = UniqueFd(::signalfd(-1, &set_, SFD_CLOEXEC | SFD_NONBLOCK));
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ignore, &old_pipe_);
  }
  ~StopSignals() {
    sigaction(SIGPIPE, &old_pipe_, nullptr);
    fd_.reset();
    pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  }
  int fd() const { return fd_.get(); }
  // The signal that made fd() readable (SIGTERM, SIGINT), or 0.
  int take() {
    signalfd_siginfo info{};
    return ::read(fd_.get(), &info, sizeof info) == static_cast<ssize_t>(sizeof info) ? static_cast<int>(info.ssi_signo)
                                                                                      : 0;
  }

 private:
  sigset_t set_{}, old_mask_{};
  struct sigaction old_pipe_ {};
  UniqueFd fd_;
};

void notify(int eventfd) {
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto ignored = ::write(eventfd, &one, sizeof one);
}

// A line of a command's for a log line: at most 200 bytes, control bytes made "?".
std::string quoted(std::string_view line) {
  std::string text(line.substr(0, 200));
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return "\"" + text + (line.size() > 200 ? "...\"" : "\"");
}

// A publish a command asked for, tied to its delivery as the line's index.
struct LinePublish {
  std::size_t line = 0;  // 1 for the first line
  std::string subject;
  std::future<Published> answer;
};

std::string describe(const CommandResult& result, const std::string& timeout) {
  const std::string took = " after " + std::to_string(result.took.count()) + " ms";
  switch (result.kind) {
    case CommandResult::Kind::kExited:
      return "exited " + std::to_string(result.code) + took;
    case CommandResult::Kind::kSignaled:
      return "killed by signal " + std::to_string(result.code) + " (" + strsignal(result.code) + ")" + took;
    case CommandResult::Kind::kTimedOut:
      return "still running at --timeout " + timeout + ": killed its process group";
    case CommandResult::Kind::kCancelled:
      return "killed: jetfan exec was told to stop twice";
    case CommandResult::Kind::kNotStarted:
      return "could not be started: " + result.error;
  }
  return "?";
}

}  // namespace

int run_exec(std::span<const std::string> args) {
  const auto parsed = parse_exec_args(args);
  if (parsed.help) {
    std::fputs(exec_usage(), stdout);
    return 0;
  }
  if (!parsed.options) {
    std::fprintf(stderr, "jetfan exec: %s\njetfan exec --help says how to use it.\n", parsed.error.c_str());
    return kExecUsage;
  }
  ExecOptions options = *parsed.options;
  std::optional<std::chrono::milliseconds> ack_timeout = options.ack_timeout;
  if (!options.config.empty()) {
    auto loaded = load_config_file(options.config);
    for (const auto& error : loaded.errors) std::fprintf(stderr, "%s\n", error.c_str());
    if (!loaded.config) return kExecConfig;
    std::string declared;
    const HandlerSettings* handler = nullptr;
    for (const auto& h : loaded.config->handlers) {
      if (h.name == options.handler) handler = &h;
      declared += (declared.empty() ? "" : ", ") + h.name;
    }
    if (!handler) {
      std::fprintf(stderr, "jetfan exec: %s declares no handler \"%s\" (it declares: %s)\n", options.config.c_str(),
                   options.handler.c_str(), declared.c_str());
      return kExecConfig;
    }
    options.socket = loaded.config->socket.path;
    ack_timeout = handler->ack_timeout;
  }
  if (const auto lookup = look_up_command(options.command[0]); lookup.exit_status != 0) {
    std::fprintf(stderr, "jetfan exec: %s\n", lookup.problem.c_str());
    return lookup.exit_status;
  }

  const std::string me = "jetfan exec [" + options.handler + "]: ";
  LineLog out(STDOUT_FILENO), err(STDERR_FILENO);
  StopSignals signals;
  UniqueFd cancel(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));  // readable: kill the running commands
  UniqueFd finished(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  std::optional<HandlerClient> client;
  try {
    client.emplace(options.socket, options.handler,
                   ClientOptions{.log = [&](std::string_view line) { err.write(me, line); }});
  } catch (const ClientError& e) {
    err.write(me, e.what());
    return e.kind() == ClientError::Kind::kRefused ? kExecRefused : kExecUnavailable;
  }
  const auto limit = client->ready().max_unconfirmed;
  std::string command_line;
  for (const auto& word : options.command) command_line += (command_line.empty() ? "" : " ") + word;
  err.write(me, "connected to " + options.socket + "; running `" + command_line + "` for each message, up to " +
                    std::to_string(std::min<unsigned>(options.concurrency, limit)) + " at once");

  // SIGTERM or SIGINT: take no more messages, let the running commands finish; a second: kill them.
  std::thread watcher([&] {
    int seen = 0;
    for (;;) {
      pollfd fds[2] = {{signals.fd(), POLLIN, 0}, {finished.get(), POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0 && errno != EINTR) return;
      if (fds[1].revents) return;
      if (!fds[0].revents) continue;
      const int signal = signals.take();
      if (signal == 0) continue;
      if (++seen == 1) {
        err.write(me, std::string(strsignal(signal)) + ": taking no new messages; waiting for the running commands");
        client->stop();
      } else {
        err.write(me, std::string(strsignal(signal)) + " again: killing the running commands");
        notify(cancel.get());
      }
    }
  });

  const std::string timeout_text = options.timeout ? std::to_string(options.timeout->count()) + "ms" : "";
  // A third of the handler's ack_timeout; not knowing it, every second, which is enough for any
  // ack_timeout from 2 s up and costs jetfan next to nothing.
  const auto wip_every =
      ack_timeout ? std::max(std::chrono::milliseconds(1), *ack_timeout / 3) : std::chrono::milliseconds(1000);
  auto handle = [&](const Delivery& msg) {
    const std::string prefix = "[seq " + std::to_string(msg.stream_seq) + "] ";
    CommandSpec spec{options.command, delivery_environment(msg, options.handler, environ),
                     msg.payload,     options.timeout,
                     wip_every,       std::chrono::seconds(2),
                     cancel.get(),    kPublishFd,
                     kMaxPublishLine};
    // Each line on the publish descriptor is published as it comes, tied to the delivery as the
    // line's index (its number less one), so that a redelivery's lines are duplicates the stream
    // drops. After a line that is not a publish, nothing more is published: the delivery is NAK'd.
    std::vector<LinePublish> publishes;
    std::size_t lines = 0;
    std::string bad_line;
    auto publish_line = [&](std::string_view line, bool too_long) {
      const std::size_t number = ++lines;
      if (!bad_line.empty()) return;
      const PublishLine parsed = parse_publish_line(line);
      const std::string why = too_long ? "is longer than " + std::to_string(kMaxPublishLine) + " bytes" : parsed.error;
      if (!why.empty()) {
        bad_line = "publish line " + std::to_string(number) + " " + why;
        err.write(prefix, bad_line + ": " + quoted(line) + "; nothing after it is published, and the message is NAK'd");
        return;
      }
      publishes.push_back(
          {number, std::string(parsed.subject),
           client->publish(msg, parsed.subject, parsed.payload, {}, static_cast<std::uint32_t>(number - 1))});
    };
    const CommandCallbacks callbacks{[&] { client->wip(msg); }, [&](std::string_view line) { out.write(prefix, line); },
                                     [&](std::string_view line) { err.write(prefix, line); }, publish_line};
    const CommandResult result = run_command(spec, callbacks);
    const std::string what = "seq " + std::to_string(msg.stream_seq) + " (key " + msg.key + ", delivery " +
                             std::to_string(msg.deliveries) + "): " + describe(result, timeout_text);
    if (result.kind == CommandResult::Kind::kExited && result.code == 0 && !bad_line.empty()) {
      err.write(me, what + "; NAK: " + bad_line);
      return Outcome::nak(std::nullopt, bad_line);
    }
    if (result.kind == CommandResult::Kind::kExited && result.code == 0) {
      // The answers before the ACK (jetfan would hold it until then anyway): a publish that failed
      // is logged with its line, and NAKs the message saying so. WIP meanwhile, as while it ran.
      std::string failed;
      for (auto& publish : publishes) {
        while (publish.answer.wait_for(wip_every) != std::future_status::ready) client->wip(msg);
        try {
          publish.answer.get();
        } catch (const PublishError& e) {
          const std::string why = "publish line " + std::to_string(publish.line) + " to " + publish.subject +
                                  " failed: " + e.code() + (e.reason().empty() ? "" : " " + e.reason());
          err.write(prefix, why);
          if (failed.empty()) failed = why;
        }
      }
      if (!failed.empty()) {
        err.write(me, what + "; NAK: " + failed);
        return Outcome::nak(std::nullopt, failed);
      }
      err.write(me, what + (publishes.empty() ? "" : "; " + std::to_string(publishes.size()) + " published") + "; ACK");
      return Outcome::ack();
    }
    if (result.kind == CommandResult::Kind::kExited && result.code == kTermStatus) {
      const std::string reason = result.last_stderr_line.empty() ? "exit status 100" : result.last_stderr_line;
      err.write(me, what + "; TERM: " + reason);
      return Outcome::term(reason);  // the encoder cuts it to fit the line
    }
    // What went wrong goes with the NAK (protocol version 3), so a dead letter says it.
    const std::string reason =
        describe(result, timeout_text) + (result.last_stderr_line.empty() ? "" : ": " + result.last_stderr_line);
    err.write(me, what + "; NAK");
    return Outcome::nak(std::nullopt, reason);
  };

  int status = 0;
  try {
    client->run(handle, {.workers = options.concurrency});
    err.write(me, "stopped");
  } catch (const ClientError& e) {
    err.write(me, e.what());
    status = e.kind() == ClientError::Kind::kIo ? kExecUnavailable : kExecRefused;
  }
  notify(finished.get());
  watcher.join();
  return status;
}

}  // namespace jetfan
