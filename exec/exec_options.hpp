#pragma once
// The command line of `jetfan exec`, parsed (on CLI11). Pure; no I/O.
//
//   jetfan exec --handler NAME (--socket PATH | --config FILE) [--concurrency N] [--timeout D]
//               [--ack-timeout D] -- CMD [ARG...]

#include <CLI/CLI.hpp>

#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace jetfan {

struct ExecOptions {
  std::string handler;
  std::string socket;  // --socket; with --config, filled in from the config by run_exec()
  std::string config;  // --config: the jetfan.yaml that declares the handler
  unsigned concurrency = 1;
  std::optional<std::chrono::milliseconds> timeout;  // none: a command may run as long as it likes
  // The handler's ack_timeout: a running command's delivery gets WIP every third of it. From
  // --ack-timeout, or (by run_exec()) from --config; unknown: WIP every second.
  std::optional<std::chrono::milliseconds> ack_timeout;
  std::vector<std::string> command;  // CMD and its arguments, run without a shell
};

struct ParsedExecArgs {
  std::optional<ExecOptions> options;  // set when the arguments are good
  std::string error;                   // else why not, for a person
  bool help = false;                   // --help: print exec_usage()
};

// The flags as given, before they are checked.
struct ExecFlags {
  std::string handler, socket, config, concurrency, timeout, ack_timeout;
};
// Declares exec's flags on `app`, parsed into `flags` (which must outlive the parse). The jetfan
// command line declares them too, so that its help and shell completions know them.
void declare_exec_flags(CLI::App& app, ExecFlags& flags);

// `args` are the words after "exec"; those after the first "--" are the command. Each flag
// takes "--flag VALUE" and "--flag=VALUE".
ParsedExecArgs parse_exec_args(std::span<const std::string> args);
const char* exec_usage();

}  // namespace jetfan
