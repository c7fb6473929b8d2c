#include "cli.hpp"

#include <charconv>

#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "config.hpp"
#include "connect_check.hpp"
#include "control_client.hpp"
#include "daemon.hpp"
#include "dev_sandbox.hpp"
#include "dlq_commands.hpp"
#include "effective_config.hpp"
#include "exec_handler.hpp"
#include "exec_options.hpp"
#include "jetfan/version.hpp"
#include "logging.hpp"
#include "nats_auth.hpp"
#include "nats_handles.hpp"
#include "startup_error.hpp"

namespace jetfan {
namespace {

// How long exiting waits for cnats's threads to finish; they have nothing left to do by then.
constexpr std::int64_t kCnatsShutdownWaitMs = 2000;

const char* kDescription =
    R"(jetfan is the one reader of a module's durable JetStream consumer. It dispatches each message over a
Unix socket to every handler whose patterns match the message's key, and acknowledges it to JetStream
only when every one of them has confirmed it. `jetfan COMMAND --help` says more of each command.)";

const char* kFooter =
    R"(--config FILE may be left out when $JETFAN_CONFIG names the file (as in jetfan's container image).

exit status: 0 ok, 64 bad command line, 69 a resource is unavailable (socket in use),
             70 an internal error (a bug), 75 JetStream does not answer (try again later),
             77 the NATS server refused the credentials, 78 bad config or missing consumer;
             jetfan exec also 76 jetfan refused the handler, 126 CMD cannot be run, 127 CMD not found.
The handler protocol is described in proto/PROTOCOL.md, the control socket in daemon/CONTROL.md.)";

// What the flags say; each command's action reads the ones it declared.
struct Values {
  std::string config;
  std::string log_level;
  std::string control;  // the control socket, instead of reading it from --config
  std::string pattern;  // tail's PATTERN
  std::string handler;  // pause's, resume's, dlq list's and redrive's --handler
  bool json = false;
  std::string seq;  // dlq list's and redrive's --seq A[-B]
  bool all = false;
  bool dry_run = false;
  bool print = false;            // check's --print
  bool connect = false;          // check's --connect
  std::string stream_seq;        // unreadable's --seq N
  ExecFlags exec;                // declared for help and completions; run_exec parses exec's words
  std::vector<std::string> cmd;  // likewise
  DevOptions dev;                // dev's flags and CMD
};

// Loads the config, printing every error. nullopt: it is not usable.
std::optional<Config> load(const std::string& path) {
  auto result = load_config_file(path);
  for (const auto& error : result.errors) std::fprintf(stderr, "%s\n", error.c_str());
  if (!result.errors.empty()) {
    std::fprintf(stderr, "jetfan: %zu error(s) in %s\n", result.errors.size(), path.c_str());
  }
  return std::move(result.config);
}

class JetfanCommandLine : public CommandLine {
 public:
  JetfanCommandLine() : CommandLine("jetfan", kDescription, kFooter) {
    add_flag_action("--version", "print the version and exit", [] { return version(); });

    auto& serve = add_command("serve", "run the daemon", [this] { return serve_command(); });
    add_config_flag(serve);
    serve.add_option("--log-level", values_.log_level, "trace, debug, info, warn or error; overrides log.level")
        ->type_name("LEVEL");

    auto& check = add_command("check", "check a config file; print every error; exit 0 if good",
                              [this] { return check_command(); });
    add_config_flag(check);
    check.add_flag("--connect", values_.connect,
                   "also check against the NATS server what serve would: credentials, stream, durable and its "
                   "settings, dead-letter streams, priority groups, a reader already there");
    check.add_flag("--print", values_.print,
                   "once the file is good, print the config jetfan would run with: every key, defaults included, "
                   "secrets hidden");

    auto& status = add_command("status",
                               "what a running jetfan does now: problems first, the consumer, each handler; exit 0 "
                               "only while it serves (75 while starting or draining)",
                               [this] { return control_command("status"); });
    status.add_flag("--json", values_.json, "print it as JSON (schema jetfan.status/1), for scripts");
    add_control_flags(status);

    auto& tail = add_command("tail",
                             "print messages as they arrive (those whose key matches PATTERN), and where they went; "
                             "never slows jetfan",
                             [this] { return control_command("tail"); });
    tail.add_option("PATTERN", values_.pattern, "a topic pattern, as in a handler's patterns (default: all)");
    add_control_flags(tail);

    add_control_flags(add_command("reload", "reload the config (as SIGHUP does); exit 78 if refused",
                                  [this] { return control_command("reload"); }));

    for (const char* name : {"pause", "resume"}) {
      auto& command = add_command(name,
                                  name == std::string("pause") ? "the handler gets nothing new; its messages are held"
                                                               : "a paused handler gets its messages again",
                                  [this, name] { return control_command(name); });
      add_handler_flag(command);
      add_control_flags(command);
    }

    auto& dlq = add_command("dlq", "the dead letters of a handler (jetfan dlq list --help)", {});
    auto& list = add_command(
        "list", "the handler's dead letters: sequence, subject, attempts, time, reason",
        [this] { return dead_letter_command(true); }, &dlq);
    add_handler_flag(list);
    list.add_option("--seq", values_.seq, "only these sequences of the dead-letter stream")->type_name("A[-B]");
    list.add_flag("--json", values_.json, "one JSON object a line, for scripts");
    add_control_flags(list);

    auto& redrive = add_command("redrive",
                                "deliver a handler's dead letters to it alone; each is deleted once it confirmed "
                                "it; exit 1 unless all went through",
                                [this] { return dead_letter_command(false); });
    add_handler_flag(redrive);
    auto* all = redrive.add_flag("--all", values_.all, "every dead letter stored when it begins");
    redrive.add_option("--seq", values_.seq, "these sequences of the dead-letter stream")
        ->type_name("A[-B]")
        ->excludes(all);
    redrive.add_flag("--dry-run", values_.dry_run, "say what would be redriven; change nothing");
    add_control_flags(redrive);

    auto& unreadable = add_command("unreadable",
                                   "messages whose subject the NATS client cannot read: those found; with --seq, "
                                   "look at stream seq N and dead-letter and terminate it if so; exit 1 if not done",
                                   [this] { return control_command("unreadable"); });
    unreadable.add_option("--seq", values_.stream_seq, "a stream sequence the search for them did not reach")
        ->type_name("N");
    add_control_flags(unreadable);

    auto& step_down = add_command("step-down",
                                  "give up the pin of the consumer's pinned_client group, so that a standby jetfan "
                                  "takes over; this one stands by; exit 1 without such a group",
                                  [this] { return control_command("step-down"); });
    add_control_flags(step_down);

    auto& exec = add_command("exec", "run CMD once per message, as a handler (jetfan exec --help says more)",
                             // run_cli hands exec's words to run_exec before parsing: exec has its own help.
                             [] { return kExitSoftware; });
    declare_exec_flags(exec, values_.exec);
    exec.add_option("CMD", values_.cmd, "the command and its arguments, after \"--\"");

    auto& dev = add_command("dev",
                            "a sandbox for a handler author: a nats-server, a stream and durable, jetfan, and CMD as "
                            "the handler; each line KEY [PAYLOAD] on stdin publishes an event",
                            [this] { return run_dev_sandbox(values_.dev); });
    dev.add_option("--handler", values_.dev.handler, "the handler's name (default: dev)")->type_name("NAME");
    dev.add_option("--pattern", values_.dev.patterns, "a topic pattern of the handler, again for more (default: #)")
        ->type_name("PATTERN");
    dev.add_option("--nats-server", values_.dev.nats_server, "the nats-server binary (default: from PATH)")
        ->type_name("PATH");
    dev.add_flag("--keep", values_.dev.keep, "keep the temp dir (config, logs, store) afterwards");
    dev.add_option("CMD", values_.dev.command, "the handler's command and its arguments, after \"--\"");

    add_command("version", "print the version", [] { return version(); });
    add_help_command();
  }

 private:
  static int version() {
    std::printf("jetfan %s\n", kVersion);
    return kExitOk;
  }

  void add_handler_flag(CLI::App& command) {
    command.add_option("--handler", values_.handler, "the handler's name in the config")->type_name("NAME")->required();
  }
  void add_config_flag(CLI::App& command) {
    command.add_option("-c,--config", values_.config, "the YAML config file (default: $JETFAN_CONFIG)")
        ->type_name("FILE");
  }
  void add_control_flags(CLI::App& command) {
    add_config_flag(command);
    command.add_option("--control", values_.control, "the control socket, instead of the one --config names")
        ->type_name("PATH");
  }

  // A container image sets $JETFAN_CONFIG, so that `docker run IMAGE check` (or status) needs no flags.
  std::string config_file() const {
    const char* from_environment = std::getenv("JETFAN_CONFIG");
    if (values_.config.empty() && from_environment != nullptr) return from_environment;
    return values_.config;
  }

  int serve_command() {
    const std::string file = config_file();
    if (file.empty()) return usage_error("serve needs --config FILE");
    const std::string& level_flag = values_.log_level;
    if (!level_flag.empty() && spdlog::level::from_str(level_flag) == spdlog::level::off && level_flag != "off") {
      return usage_error("--log-level must be trace, debug, info, warn or error");
    }
    auto config = load(file);
    if (!config) return kExitConfig;
    const std::string level = level_flag.empty() ? config->log_level : level_flag;
    setup_logging(config->log_format, level, stderr_is_journal());
    log_info("starting", {{"version", kVersion}, {"file", config->file}}, "jetfan {} starting with {}", kVersion,
             config->file);
    int status = kExitOk;
    try {
      Daemon daemon(std::move(*config), !level_flag.empty());
      status = daemon.run();
    } catch (const StartupError& e) {
      log_critical("startup.failed", {{"exit_status", e.exit_code()}}, "{}", e.what());
      status = e.exit_code();
    }
    // cnats may still run a callback on one of its threads; wait for them all before exiting.
    nats_CloseAndWait(kCnatsShutdownWaitMs);
    return status;
  }

  int check_command() {
    const std::string file = config_file();
    if (file.empty()) return usage_error("check needs --config FILE");
    const auto config = load(file);
    if (!config) return kExitConfig;
    // The secret files as serve reads them before its first connect: one that others may read is
    // a warning, one that cannot be used an error, in serve's words.
    for (const auto& warning : exposed_secret_file_warnings(config->nats, config->file)) {
      std::fprintf(stderr, "jetfan: warning: %s\n", warning.c_str());
    }
    // ${CREDENTIALS_DIRECTORY} is set only in a unit with LoadCredential=: from a shell, such a file
    // cannot be found, which says nothing about the unit. Say so and check the rest.
    NatsSettings nats = config->nats;
    for (auto* path : {&nats.token_file, &nats.password_file}) {
      if (path->empty() || expand_credentials_directory(*path)) continue;
      std::fprintf(stderr,
                   "jetfan: note: %s is not checked here: $CREDENTIALS_DIRECTORY is set only in a unit with "
                   "LoadCredential= (to check the file, run: CREDENTIALS_DIRECTORY=DIR jetfan check ...)\n",
                   path->c_str());
      path->clear();
    }
    if (auto problem = check_credential_files(nats)) {
      std::fprintf(stderr, "%s: %s\njetfan: 1 error(s) in %s\n", config->file.c_str(), problem->c_str(),
                   config->file.c_str());
      return kExitConfig;
    }
    if (values_.print) {
      std::fputs(effective_config_yaml(*config).c_str(), stdout);
      return kExitOk;
    }
    if (values_.connect) {
      setup_logging(LogFormat::kText, "warn", false);  // the client's retries and warnings, on stderr
      const int status = run_connect_check(*config, stdout, std::chrono::seconds(10));
      std::printf("%s: %s\n", config->file.c_str(),
                  status == kExitOk ? "OK against the server" : "NOT OK against the server (FAIL lines above)");
      return status;
    }
    std::printf("%s: OK: consumer \"%s\" of stream \"%s\", %zu handler(s), socket %s\n", config->file.c_str(),
                config->consumer.durable.c_str(), config->consumer.stream.c_str(), config->handlers.size(),
                config->socket.path.c_str());
    return kExitOk;
  }

  // dlq list and redrive (the work is in dlq_commands.cpp).
  int dead_letter_command(bool list) {
    if (!list && !values_.all && values_.seq.empty()) return usage_error("redrive needs either --all or --seq A[-B]");
    DeadLetterArguments args;
    args.list = list;
    args.handler = values_.handler;
    args.seq = values_.seq;
    args.all = values_.all;
    args.dry_run = values_.dry_run;
    args.json = values_.json;
    return control_command(list ? "dlq list" : "redrive", &args);
  }

  // status, tail, reload, pause, resume, dlq list, redrive, unreadable: talk to a running jetfan on its
  // control socket.
  int control_command(const std::string& command, const DeadLetterArguments* dead_letters = nullptr) {
    std::string path = values_.control;
    if (path.empty()) {
      const std::string file = config_file();
      if (file.empty()) return usage_error(command + " needs --config FILE or --control PATH");
      const auto config = load(file);
      if (!config) {
        // The running jetfan would refuse this file for the same errors; say so, for the journal
        // when systemd runs this as ExecReload=.
        if (command == "reload") {
          std::fprintf(stderr, "jetfan: reload refused: %s has errors; the running jetfan keeps its config\n",
                       file.c_str());
        }
        return kExitConfig;
      }
      path = config->control.path;
    }
    if (dead_letters != nullptr) return run_dead_letter_command(path, *dead_letters);
    if (command == "status") return control_status(path, values_.json);
    if (command == "reload") return control_reload(path);
    if (command == "pause" || command == "resume") return control_pause(path, values_.handler, command == "pause");
    if (command == "step-down") return control_step_down(path);
    if (command == "unreadable") {
      std::uint64_t seq = 0;
      const std::string& text = values_.stream_seq;
      if (!text.empty()) {
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), seq);
        if (error != std::errc() || end != text.data() + text.size() || seq == 0) {
          return usage_error("--seq " + text + ": not a stream sequence (a number from 1)");
        }
      }
      return control_unreadable(path, seq);
    }
    return control_tail(path, values_.pattern);
  }

  Values values_;
};

}  // namespace

std::unique_ptr<CommandLine> make_jetfan_command_line() { return std::make_unique<JetfanCommandLine>(); }

int run_cli(int argc, char** argv) {
  const std::vector<std::string> words(argv + 1, argv + argc);
  // `exec` is a handler, not the daemon: its words are its own.
  if (!words.empty() && words.front() == "exec") return run_exec(std::span(words).subspan(1));
  try {
    setup_logging(LogFormat::kText, "info", stderr_is_journal());
    return make_jetfan_command_line()->run(words);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "jetfan: internal error: %s\n", e.what());
    return kExitSoftware;
  }
}

}  // namespace jetfan
