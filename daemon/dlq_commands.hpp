#pragma once
// `jetfan dlq list` and `jetfan redrive`: the client side. The CLI parses the options
// (cli.cpp) into DeadLetterArguments; these send the control socket's DLQ or REDRIVE command
// (daemon/CONTROL.md), copy what jetfan answers to stdout as it comes, and say by the exit status
// whether all went through. Blocking; used by the CLI only.

#include <string>

namespace jetfan {

struct DeadLetterArguments {
  bool list = false;  // dlq list; else redrive
  std::string handler;
  std::string seq;  // --seq A or A-B; empty: every one (list), or --all (redrive)
  bool all = false;
  bool dry_run = false;
  bool json = false;
};

// The words of the control command, e.g. "REDRIVE builder 4-9 DRY-RUN".
std::string dead_letter_command_line(const DeadLetterArguments& args);

// Exit status: 0 every dead letter went through (redrive: confirmed by the handler and deleted;
// list: all read), 1 not all (the last line says how many of each), 64 refused (no such handler,
// no dead_letter, a bad range), 69 the control socket cannot be reached.
int run_dead_letter_command(const std::string& control_path, const DeadLetterArguments& args);

}  // namespace jetfan
