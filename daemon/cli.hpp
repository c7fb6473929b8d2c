#pragma once
// The `jetfan` command line: serve, check, status, tail, reload, pause, resume, exec, version,
// help. run_cli returns the process exit status and catches every exception; nothing escapes to
// main. make_jetfan_command_line is the same grammar, for tests that hold the man page and the
// shell completions to it (parsing it does no I/O; running a command does).

#include <memory>

#include "command_line.hpp"

namespace jetfan {

int run_cli(int argc, char** argv);

// Every command and flag of run_cli, declared; owns the values they are parsed into.
std::unique_ptr<CommandLine> make_jetfan_command_line();

}  // namespace jetfan
