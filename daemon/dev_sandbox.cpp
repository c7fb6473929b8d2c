#include "dev_sandbox.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nats/nats.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

#include "log_follower.hpp"
#include "nats_handles.hpp"
#include "startup_error.hpp"

extern char** environ;

namespace jetfan {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

volatile std::sig_atomic_t interrupted = 0;

// A process of the sandbox: stdin from /dev/null, stdout and stderr to `log` (empty: the
// terminal's). Stopped with SIGTERM when it goes, then SIGKILL after 10 s.
class Part {
 public:
  Part(std::string name, const std::vector<std::string>& argv, const std::vector<std::string>& env,
       const std::string& log)
      : name_(std::move(name)) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    if (!log.empty()) {
      posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
      posix_spawn_file_actions_adddup2(&actions, 1, 2);
    }
    std::vector<char*> args, envp;
    for (const auto& word : argv) args.push_back(const_cast<char*>(word.c_str()));
    args.push_back(nullptr);
    for (const auto& entry : env) envp.push_back(const_cast<char*>(entry.c_str()));
    envp.push_back(nullptr);
    // A group of its own: a handler started through npx or a shell is several processes, and all
    // of them must stop with it.
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attributes, 0);
    const int failed = posix_spawnp(&pid_, argv[0].c_str(), &actions, &attributes, args.data(), envp.data());
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    if (failed != 0) {
      pid_ = -1;
      throw StartupError(
          kExitUnavailable,
          "jetfan dev: cannot start " + name_ + " (" + argv[0] + "): " + std::strerror(failed) +
              (name_ == "nats-server" ? " (Debian: apt install nats-server; or --nats-server PATH)" : ""));
    }
  }
  Part(const Part&) = delete;
  Part& operator=(const Part&) = delete;
  ~Part() { stop(); }

  bool running() {
    if (pid_ < 0) return false;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return false;
    }
    return true;
  }
  // SIGTERM to the whole group, SIGKILL to what is left of it after 10 s.
  void stop() {
    if (pid_ < 0) return;
    const pid_t group = pid_;
    ::kill(-group, SIGTERM);
    // Until every process of the group is gone (the leader reaped here, the rest by their parents).
    for (int i = 0; i < 1000 && (running() || ::kill(-group, 0) == 0); ++i) std::this_thread::sleep_for(10ms);
    ::kill(-group, SIGKILL);  // what is left after 10 s
    if (pid_ > 0) ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  pid_t pid_ = -1;
};

// The parts, stopped the last started first (the handler, then jetfan, which drains while the
// server is still there, then the server), however the sandbox ends.
struct Parts {
  std::vector<std::unique_ptr<Part>> started;
  Parts() = default;
  Parts(const Parts&) = delete;
  Parts& operator=(const Parts&) = delete;
  ~Parts() { stop_all(); }
  void stop_all() {
    while (!started.empty()) started.pop_back();
  }
  Part& add(std::unique_ptr<Part> part) { return *started.emplace_back(std::move(part)); }
};

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Polls `path` until it holds `part`, while `part_process` runs; false after `timeout`.
bool wait_for_line(const std::string& path, const std::string& part, Part& process, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline && process.running() && !interrupted) {
    if (read_text(path).find(part) != std::string::npos) return true;
    std::this_thread::sleep_for(50ms);
  }
  return read_text(path).find(part) != std::string::npos;
}

void check(natsStatus status, const std::string& what) {
  if (status != NATS_OK) {
    throw StartupError(kExitUnavailable, "jetfan dev: " + what + ": " + natsStatus_GetText(status));
  }
}

std::string self_executable() {
  std::error_code error;
  const auto path = fs::read_symlink("/proc/self/exe", error);
  return error ? std::string("jetfan") : path.string();
}

// The stream DEV on dev.> and the durable pull consumer dev, as a module's controller makes them.
void make_stream_and_durable(natsConnection* connection) {
  jsCtx* raw = nullptr;
  check(natsConnection_JetStream(&raw, connection, nullptr), "JetStream");
  JsCtxPtr js(raw);
  jsStreamConfig stream;
  jsStreamConfig_Init(&stream);
  stream.Name = "DEV";
  const char* subjects[] = {"dev.>"};
  stream.Subjects = subjects;
  stream.SubjectsLen = 1;
  jsStreamInfo* stream_info = nullptr;
  jsErrCode code;
  check(js_AddStream(&stream_info, js.get(), &stream, nullptr, &code), "make the stream DEV");
  jsStreamInfo_Destroy(stream_info);
  jsConsumerConfig consumer;
  jsConsumerConfig_Init(&consumer);
  consumer.Durable = "dev";
  consumer.AckPolicy = js_AckExplicit;
  jsConsumerInfo* consumer_info = nullptr;
  check(js_AddConsumer(&consumer_info, js.get(), "DEV", &consumer, nullptr, &code), "make the durable dev");
  jsConsumerInfo_Destroy(consumer_info);
}

// CMD with each "{socket}" and "{handler}" in its words replaced, for handlers that take them as
// arguments (examples/handler.py SOCKET NAME).
std::vector<std::string> with_places(std::vector<std::string> command, const std::string& socket,
                                     const std::string& handler) {
  for (auto& word : command) {
    for (const auto& [place, value] :
         {std::pair<std::string, std::string>{"{socket}", socket}, {"{handler}", handler}}) {
      for (auto at = word.find(place); at != std::string::npos; at = word.find(place, at + value.size())) {
        word.replace(at, place.size(), value);
      }
    }
  }
  return command;
}

// What of jetfan's log a handler author wants to see as it happens: its warnings and errors (a
// failed delivery with the NAK's reason, a TERM, a refused HELLO) and the handler's connections.
// A line is "TIME LEVEL MESSAGE"; what is shown is "jetfan: LEVEL MESSAGE".
void show_jetfan_line(std::string_view line, const std::string& handler) {
  const auto level_at = line.find(' ');
  if (level_at == std::string_view::npos) return;
  const std::string_view rest = line.substr(level_at + 1);
  const bool loud = rest.starts_with("warning ") || rest.starts_with("error ") || rest.starts_with("critical ");
  const bool connection = rest.starts_with("info handler \"" + handler + "\" (connection") &&
                          (rest.ends_with(" connected") || rest.find(" disconnected") != std::string_view::npos);
  if (!loud && !connection) return;
  std::fprintf(stderr, "jetfan: %.*s\n", static_cast<int>(rest.size()), rest.data());
}

std::string yaml_list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (const auto& item : items) out += (out.size() > 1 ? ", \"" : "\"") + item + "\"";
  return out + "]";
}

}  // namespace

int run_dev_sandbox(const DevOptions& options) {
  if (options.command.empty()) {
    std::fprintf(stderr, "jetfan dev: no command: put the handler's after \"--\"\njetfan dev --help says more.\n");
    return kExitUsage;
  }
  const std::vector<std::string> patterns = options.patterns.empty() ? std::vector<std::string>{"#"} : options.patterns;
  std::string dir_template = (fs::temp_directory_path() / "jetfan-dev.XXXXXX").string();
  if (!::mkdtemp(dir_template.data())) {
    std::fprintf(stderr, "jetfan dev: cannot make a temp dir: %s\n", std::strerror(errno));
    return kExitUnavailable;
  }
  const std::string dir = dir_template;
  struct sigaction on_signal {};
  on_signal.sa_handler = [](int) { interrupted = 1; };  // no SA_RESTART: a read in progress returns
  ::sigaction(SIGINT, &on_signal, nullptr);
  ::sigaction(SIGTERM, &on_signal, nullptr);
  const std::vector<std::string> env(
      environ, environ + [] {
        std::size_t n = 0;
        while (environ[n] != nullptr) ++n;
        return n;
      }());

  int status = kExitOk;
  try {
    Parts parts;
    const std::string nats_log = dir + "/nats-server.log";
    Part& nats_server =
        parts.add(std::make_unique<Part>("nats-server",
                                         std::vector<std::string>{options.nats_server, "-js", "-sd", dir + "/jetstream",
                                                                  "-a", "127.0.0.1", "-p", "-1", "-l", nats_log},
                                         env, ""));
    if (!wait_for_line(nats_log, "Listening for client connections on", nats_server, 10s)) {
      throw StartupError(kExitUnavailable,
                         "jetfan dev: nats-server did not start (is it installed? Debian: apt "
                         "install nats-server); its log: " +
                             nats_log);
    }
    const std::string log = read_text(nats_log);
    const auto at = log.find("Listening for client connections on ");
    const std::string address = log.substr(at + 36, log.find('\n', at) - at - 36);
    const std::string url = "nats://" + address;

    natsConnection* raw = nullptr;
    check(natsConnection_ConnectTo(&raw, url.c_str()), "connect to " + url);
    NatsConnectionPtr connection(raw);
    make_stream_and_durable(connection.get());

    const std::string config = dir + "/jetfan.yaml";
    const std::string socket = dir + "/dev.sock";
    std::ofstream(config) << "# jetfan dev's config: " << url << ", stream DEV, durable dev\n"
                          << "nats:\n  servers: [\"" << url << "\"]\n"
                          << "consumer:\n  stream: DEV\n  durable: dev\n"
                          << "key:\n  strip_prefix: \"dev.\"\n"
                          << "socket:\n  path: " << socket << "\n"
                          << "delivery:\n  nak_delay: 500ms\n  nak_delay_max: 5s\n  drain_timeout: 3s\n"
                          << "handlers:\n  - name: " << options.handler << "\n    patterns: " << yaml_list(patterns)
                          << "\n";
    const std::string jetfan_log = dir + "/jetfan.log";
    Part& jetfan = parts.add(std::make_unique<Part>(
        "jetfan", std::vector<std::string>{self_executable(), "serve", "--config", config}, env, jetfan_log));
    if (!wait_for_line(jetfan_log, "serving consumer", jetfan, 20s)) {
      throw StartupError(kExitUnavailable, "jetfan dev: jetfan did not start serving; its log: " + jetfan_log);
    }
    // It lives past parts.stop_all() below, so what jetfan says while it drains is shown too.
    LogFollower follower(jetfan_log,
                         [&handler = options.handler](std::string_view line) { show_jetfan_line(line, handler); });
    std::vector<std::string> handler_env = env;
    handler_env.push_back("JETFAN_SOCKET=" + socket);
    handler_env.push_back("JETFAN_HANDLER=" + options.handler);
    handler_env.push_back("JETFAN_CONFIG=" + config);
    Part& handler = parts.add(std::make_unique<Part>(
        "handler " + options.handler, with_places(options.command, socket, options.handler), handler_env, ""));
    std::string command_line;
    for (const auto& word : with_places(options.command, socket, options.handler)) {
      command_line += (command_line.empty() ? "" : " ") + word;
    }
    std::fprintf(stderr,
                 "jetfan dev: nats-server at %s, stream DEV, durable dev; jetfan serves %s (log %s);\n"
                 "  handler \"%s\" (patterns %s) runs: %s\n"
                 "  ($JETFAN_SOCKET and $JETFAN_HANDLER set). Each line \"KEY [PAYLOAD]\" publishes an event on "
                 "dev.KEY (its key: KEY), held for the handler until it connects; what jetfan says of the handler\n"
                 "  (connections, failed deliveries with a NAK's reason, TERMs) is shown as \"jetfan: ...\". Ctrl-D or "
                 "Ctrl-C ends.\n",
                 url.c_str(), socket.c_str(), jetfan_log.c_str(), options.handler.c_str(), yaml_list(patterns).c_str(),
                 command_line.c_str());
    jsCtx* js_raw = nullptr;
    check(natsConnection_JetStream(&js_raw, connection.get(), nullptr), "JetStream");
    JsCtxPtr js(js_raw);
    std::string line;
    while (!interrupted && std::getline(std::cin, line)) {
      const auto first = line.find_first_not_of(' ');
      if (first == std::string::npos) continue;
      const auto space = line.find(' ', first);
      const std::string key = line.substr(first, space - first);
      const std::string payload = space == std::string::npos ? std::string() : line.substr(space + 1);
      const std::string subject = "dev." + key;
      jsPubAck* ack = nullptr;
      jsErrCode code;
      const natsStatus published =
          js_Publish(&ack, js.get(), subject.c_str(), payload.data(), static_cast<int>(payload.size()), nullptr, &code);
      if (published == NATS_OK) {
        std::fprintf(stderr, "jetfan dev: published %s (stream seq %llu)\n", subject.c_str(),
                     static_cast<unsigned long long>(ack->Sequence));
      } else {
        std::fprintf(stderr, "jetfan dev: could not publish on %s: %s (a key is tokens joined by '.')\n",
                     subject.c_str(), natsStatus_GetText(published));
      }
      jsPubAck_Destroy(ack);
      if (!handler.running()) {
        std::fprintf(stderr, "jetfan dev: the handler has exited; stopping\n");
        break;
      }
    }
    std::fprintf(stderr, "jetfan dev: stopping the handler, jetfan (it drains), nats-server\n");
    if (read_text(jetfan_log).find("handler \"" + options.handler + "\" (connection") == std::string::npos) {
      std::fprintf(stderr, "jetfan dev: the handler never connected to jetfan (see its output above)\n");
    }
    parts.stop_all();
    const std::string said = read_text(jetfan_log);
    if (const auto stopped = said.rfind("stopped: "); stopped != std::string::npos) {
      std::fprintf(stderr, "jetfan dev: jetfan %s\n", said.substr(stopped, said.find('\n', stopped) - stopped).c_str());
    }
  } catch (const StartupError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    status = e.exit_code();
  }
  if (options.keep || status != kExitOk) {
    std::fprintf(stderr, "jetfan dev: left %s (config, logs, store)\n", dir.c_str());
  } else {
    std::error_code ignored;
    fs::remove_all(dir, ignored);
  }
  return status;
}

}  // namespace jetfan
