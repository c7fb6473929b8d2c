#include "cli.hpp"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "config.hpp"
#include "control_client.hpp"
#include "daemon.hpp"
#include "dlq_commands.hpp"
#include "exec_handler.hpp"
#include "jetfan/version.hpp"
#include "logging.hpp"
#include "nats_handles.hpp"
#include "startup_error.hpp"

namespace jetfan {
namespace {

// How long exiting waits for cnats's threads to finish; they have nothing left to do by then.
constexpr std::int64_t kCnatsShutdownWaitMs = 2000;

const char* kUsage = R"(usage: jetfan <command> [options]

jetfan is the one reader of a module's durable JetStream consumer. It dispatches each message over a
Unix socket to every handler whose patterns match the message's key, and acknowledges it to JetStream
only when every one of them has confirmed it.

commands:
  serve --config FILE [--log-level LEVEL]   run the daemon
  check --config FILE                       check a config file; print every error; exit 0 if good
  status [--json] (--config FILE | --control PATH)
                                            what a running jetfan does now: problems first, the
                                            consumer, each handler; --json for scripts; exit 0
                                            only while it serves (75 while starting or draining)
  tail [PATTERN] (--config FILE | --control PATH)
                                            print messages as they arrive (those whose key matches
                                            PATTERN), and where they went; never slows jetfan
  reload (--config FILE | --control PATH)   reload the config (as SIGHUP does); exit 78 if refused
  pause --handler NAME (--config FILE | --control PATH)
                                            the handler gets nothing new; its messages are held
  resume --handler NAME (--config FILE | --control PATH)
                                            it gets them again
  dlq list --handler NAME [--seq A[-B]] [--json] (--config FILE | --control PATH)
                                            the handler's dead letters: sequence, subject,
                                            attempts, time, reason
  redrive --handler NAME (--all | --seq A[-B]) [--dry-run] (--config FILE | --control PATH)
                                            deliver them to that handler alone; each is deleted
                                            once it confirmed it; exit 1 unless all went through
  exec --handler NAME ... -- CMD ARGS...    run CMD once per message, as handler NAME
                                            (jetfan exec --help says more)
  version, --version                        print the version
  help, --help                              print this help

--config FILE may be left out when $JETFAN_CONFIG names the file (as in jetfan's container image).

exit status: 0 ok, 64 bad command line, 69 a resource is unavailable (socket in use),
             70 an internal error (a bug), 75 JetStream does not answer (try again later),
             77 the NATS server refused the credentials, 78 bad config or missing consumer.
The handler protocol is described in proto/PROTOCOL.md, the control socket in daemon/CONTROL.md.
)";

struct Arguments {
  std::string command;
  std::string config;
  std::string log_level;
  std::string control;  // the control socket, instead of reading it from --config
  std::string operand;  // tail's PATTERN
  std::string handler;  // pause's and resume's --handler
  bool json = false;
  std::string error;
};

Arguments parse_arguments(int argc, char** argv) {
  Arguments args;
  std::vector<std::string> words(argv + 1, argv + argc);
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& word = words[i];
    auto value = [&](std::string& out) {
      if (i + 1 >= words.size()) {
        args.error = word + " needs a value";
      } else {
        out = words[++i];
      }
    };
    if (word == "--config" || word == "-c") {
      value(args.config);
    } else if (word.rfind("--config=", 0) == 0) {
      args.config = word.substr(9);
    } else if (word == "--log-level") {
      value(args.log_level);
    } else if (word == "--control") {
      value(args.control);
    } else if (word == "--handler") {
      value(args.handler);
    } else if (word == "--json") {
      args.json = true;
    } else if (word == "--version" || word == "--help" || word == "-h") {
      args.command = word == "--version" ? "version" : "help";
    } else if (args.command.empty() && !word.empty() && word[0] != '-') {
      args.command = word;
    } else if (args.command == "tail" && args.operand.empty() && !word.empty() && word[0] != '-') {
      args.operand = word;
    } else {
      args.error = "unexpected argument \"" + word + "\"";
    }
  }
  return args;
}

int usage_error(const std::string& why) {
  std::fprintf(stderr, "jetfan: %s\n\n%s", why.c_str(), kUsage);
  return kExitUsage;
}

// Loads the config, printing every error. nullopt: it is not usable.
std::optional<Config> load(const std::string& path) {
  auto result = load_config_file(path);
  for (const auto& error : result.errors) std::fprintf(stderr, "%s\n", error.c_str());
  if (!result.errors.empty()) {
    std::fprintf(stderr, "jetfan: %zu error(s) in %s\n", result.errors.size(), path.c_str());
  }
  return std::move(result.config);
}

int serve(const Arguments& args) {
  auto config = load(args.config);
  if (!config) return kExitConfig;
  const std::string level = args.log_level.empty() ? config->log_level : args.log_level;
  setup_logging(config->log_format, level, stderr_is_journal());
  log_info("starting", {{"version", kVersion}, {"file", config->file}}, "jetfan {} starting with {}", kVersion,
           config->file);
  int status = kExitOk;
  try {
    Daemon daemon(std::move(*config), !args.log_level.empty());
    status = daemon.run();
  } catch (const StartupError& e) {
    log_critical("startup.failed", {{"exit_status", e.exit_code()}}, "{}", e.what());
    status = e.exit_code();
  }
  // cnats may still run a callback on one of its threads; wait for them all before exiting.
  nats_CloseAndWait(kCnatsShutdownWaitMs);
  return status;
}

int control_pause_command(const std::string& path, const Arguments& args) {
  if (args.handler.empty()) return usage_error(args.command + " needs --handler NAME");
  return control_pause(path, args.handler, args.command == "pause");
}

// status, tail, reload, pause, resume: talk to a running jetfan on its control socket.
int control(const Arguments& args) {
  std::string path = args.control;
  if (path.empty()) {
    if (args.config.empty()) return usage_error(args.command + " needs --config FILE or --control PATH");
    const auto config = load(args.config);
    if (!config) {
      // The running jetfan would refuse this file for the same errors; say so, for the journal
      // when systemd runs this as ExecReload=.
      if (args.command == "reload") {
        std::fprintf(stderr, "jetfan: reload refused: %s has errors; the running jetfan keeps its config\n",
                     args.config.c_str());
      }
      return kExitConfig;
    }
    path = config->control.path;
  }
  if (args.command == "status") return control_status(path, args.json);
  if (args.command == "reload") return control_reload(path);
  if (args.command == "pause" || args.command == "resume") return control_pause_command(path, args);
  return control_tail(path, args.operand);
}

// dlq list and redrive: their options (the work is in dlq_commands.cpp). words[0] is the command.
int dead_letter_command(const std::vector<std::string>& words) {
  DeadLetterArguments args;
  args.list = words[0] == "dlq";
  std::size_t i = 1;
  if (args.list && (words.size() < 2 || words[1] != "list")) return usage_error("dlq needs a subcommand: dlq list");
  if (args.list) i = 2;
  std::string config, control_path;
  for (; i < words.size(); ++i) {
    const std::string& word = words[i];
    std::string* value = nullptr;
    if (word == "--handler") {
      value = &args.handler;
    } else if (word == "--config" || word == "-c") {
      value = &config;
    } else if (word == "--control") {
      value = &control_path;
    } else if (word == "--seq") {
      value = &args.seq;
    } else if (word == "--json" && args.list) {
      args.json = true;
    } else if (word == "--all" && !args.list) {
      args.all = true;
    } else if (word == "--dry-run" && !args.list) {
      args.dry_run = true;
    } else {
      return usage_error("unexpected argument \"" + word + "\"");
    }
    if (value && i + 1 >= words.size()) return usage_error(word + " needs a value");
    if (value) *value = words[++i];
  }
  const std::string command = args.list ? "dlq list" : "redrive";
  if (args.handler.empty()) return usage_error(command + " needs --handler NAME");
  if (!args.list && args.all == !args.seq.empty()) return usage_error("redrive needs either --all or --seq A[-B]");
  if (const char* from_environment = std::getenv("JETFAN_CONFIG"); config.empty() && from_environment) {
    config = from_environment;
  }
  if (control_path.empty()) {
    if (config.empty()) return usage_error(command + " needs --config FILE or --control PATH");
    const auto loaded = load(config);
    if (!loaded) return kExitConfig;
    control_path = loaded->control.path;
  }
  return run_dead_letter_command(control_path, args);
}

}  // namespace

int run_cli(int argc, char** argv) {
  // `exec` is a handler, not the daemon: its words are its own.
  if (argc >= 2 && std::strcmp(argv[1], "exec") == 0) return run_exec(std::vector<std::string>(argv + 2, argv + argc));
  try {
    setup_logging(LogFormat::kText, "info", stderr_is_journal());
    if (argc >= 2 && (std::strcmp(argv[1], "dlq") == 0 || std::strcmp(argv[1], "redrive") == 0)) {
      return dead_letter_command(std::vector<std::string>(argv + 1, argv + argc));
    }
    Arguments args = parse_arguments(argc, argv);
    if (!args.error.empty()) return usage_error(args.error);
    // A container image sets it, so that `docker run IMAGE check` (or status) needs no flags.
    if (const char* from_environment = std::getenv("JETFAN_CONFIG");
        args.config.empty() && from_environment != nullptr && *from_environment != '\0') {
      args.config = from_environment;
    }
    if (args.command == "version") {
      std::printf("jetfan %s\n", kVersion);
      return kExitOk;
    }
    if (args.command == "help") {
      std::printf("%s", kUsage);
      return kExitOk;
    }
    if (args.command == "status" || args.command == "tail" || args.command == "reload" || args.command == "pause" ||
        args.command == "resume") {
      return control(args);
    }
    if (args.command != "serve" && args.command != "check") {
      return usage_error(args.command.empty() ? "no command given" : "unknown command \"" + args.command + "\"");
    }
    if (args.config.empty()) return usage_error(args.command + " needs --config FILE");
    if (!args.log_level.empty() && spdlog::level::from_str(args.log_level) == spdlog::level::off &&
        args.log_level != "off") {
      return usage_error("--log-level must be trace, debug, info, warn or error");
    }
    if (args.command == "check") {
      const auto config = load(args.config);
      if (!config) return kExitConfig;
      std::printf("%s: OK: consumer \"%s\" of stream \"%s\", %zu handler(s), socket %s\n", config->file.c_str(),
                  config->consumer.durable.c_str(), config->consumer.stream.c_str(), config->handlers.size(),
                  config->socket.path.c_str());
      return kExitOk;
    }
    return serve(args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "jetfan: internal error: %s\n", e.what());
    return kExitSoftware;
  }
}

}  // namespace jetfan
