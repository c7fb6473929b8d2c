#pragma once
// A command line of commands, on CLI11: each command is declared once, with its flags and the
// action that runs it, and parsing picks the action. Per-command --help, --flag=value and short
// usage errors (exit 64) come with every command declared here. Tests walk app() for every
// command and flag (the man page and the shell completions must name them all).
//
// Adding a command: add_command("name", "what it does", action) and its flags on the CLI::App it
// returns, whose values the action reads; a command with commands of its own (`jetfan dlq list`)
// is add_command("dlq", "...", {}) and then add_command("list", "...", action, &dlq).
//
// Not thread-safe; the actions run on the thread that calls run(). The values flags are parsed
// into belong to the caller and must outlive run().

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace jetfan {

class CommandLine {
 public:
  using Action = std::function<int()>;

  // `name` is the program's name in help and errors; `footer` ends the top-level --help.
  CommandLine(const std::string& name, const std::string& description, const std::string& footer);
  virtual ~CommandLine() = default;
  CommandLine(const CommandLine&) = delete;
  CommandLine& operator=(const CommandLine&) = delete;
  CommandLine(CommandLine&&) = delete;
  CommandLine& operator=(CommandLine&&) = delete;

  // Declares the command `name` under `parent` (the top level when null). An empty `action`
  // makes a group: one of its own commands must follow it. The returned App lives as long as
  // this object.
  CLI::App& add_command(const std::string& name, const std::string& description, Action action,
                        CLI::App* parent = nullptr);
  // A top-level flag that runs `action` instead of a command (--version).
  void add_flag_action(const std::string& flag, const std::string& description, Action action);
  // Declares `help [COMMAND...]`: jetfan's help, or the help of the command the words name
  // (`help dlq list`), as `COMMAND --help` prints it; a word that names no command is a usage error.
  void add_help_command();

  CLI::App& app() { return app_; }
  const CLI::App& app() const { return app_; }

  // Parses `args` (the words after the program's name) and runs the chosen action, returning
  // its exit status. --help anywhere: that command's help on stdout, 0. A word no command
  // knows, a missing value, no command at all: a short usage error on stderr, 64.
  int run(const std::vector<std::string>& args);

  // Prints "NAME: why" and where to find help on stderr; returns 64 (EX_USAGE).
  int usage_error(const std::string& why) const;

 private:
  int help(const std::vector<std::string>& words);

  CLI::App app_;
  Action chosen_;
  bool help_declared_ = false;
};

}  // namespace jetfan
