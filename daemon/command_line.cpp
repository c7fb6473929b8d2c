#include "command_line.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <sstream>

#include "startup_error.hpp"

namespace jetfan {
namespace {

// CLI11's layout, but the usage line first (scripts and people look for "usage:" at the top).
class UsageFirst : public CLI::Formatter {
 public:
  UsageFirst() {
    label("Usage", "usage");
    label("SUBCOMMAND", "COMMAND");
  }
  std::string make_help(const CLI::App* app, std::string name, CLI::AppFormatMode mode) const override {
    if (mode == CLI::AppFormatMode::Sub) return make_expanded(app);
    std::stringstream out;
    out << make_usage(app, name) << '\n'
        << make_description(app) << make_positionals(app) << make_groups(app, mode) << make_subcommands(app, mode)
        << '\n'
        << make_footer(app);
    return out.str();
  }
};

// The deepest command that parsing chose, for the usage line of an error.
const CLI::App* chosen_command(const CLI::App& app) {
  const CLI::App* command = &app;
  for (auto subcommands = command->get_subcommands(); !subcommands.empty(); subcommands = command->get_subcommands()) {
    command = subcommands.front();
  }
  return command;
}

std::string command_path(const CLI::App* command) {
  std::string path;
  for (; command != nullptr; command = command->get_parent()) {
    path = command->get_name() + (path.empty() ? "" : " ") + path;
  }
  return path;
}

}  // namespace

CommandLine::CommandLine(const std::string& name, const std::string& description, const std::string& footer)
    : app_(description, name) {
  app_.formatter(std::make_shared<UsageFirst>());
  app_.footer(footer);
  app_.set_help_flag("-h,--help", "print this help and exit (after a command: that command's help)");
}

CLI::App& CommandLine::add_command(const std::string& name, const std::string& description, Action action,
                                   CLI::App* parent) {
  CLI::App* command = (parent != nullptr ? parent : &app_)->add_subcommand(name, description);
  command->group("Commands");
  if (action) {
    command->callback([this, action = std::move(action)] { chosen_ = action; });
  } else {
    command->require_subcommand(1);
  }
  return *command;
}

void CommandLine::add_flag_action(const std::string& flag, const std::string& description, Action action) {
  app_.add_flag_callback(
      flag, [this, action = std::move(action)] { chosen_ = action; }, description);
}

void CommandLine::add_help_command() {
  // Declared for the list of commands, the completions and the man page; run() answers it before
  // CLI11 parses, since CLI11 would take the words after it for the commands they name.
  add_command("help", "print this help, or a command's: help [COMMAND...]", [this] { return help({}); });
  help_declared_ = true;
}

int CommandLine::help(const std::vector<std::string>& words) {
  CLI::App* command = &app_;
  for (const auto& word : words) {
    if (word == "-h" || word == "--help") {  // `help --help`: the help of help
      command = app_.get_subcommand("help");
      break;
    }
    const auto subcommands = command->get_subcommands([&](CLI::App* sub) { return sub->get_name() == word; });
    if (subcommands.empty())
      return usage_error("help: no command \"" + word + "\" in \"" + command_path(command) + "\"");
    command = subcommands.front();
  }
  // The formatter itself: App::help() would print the help of the command parsed last.
  std::fputs(app_.get_formatter()->make_help(command, command_path(command), CLI::AppFormatMode::Normal).c_str(),
             stdout);
  return kExitOk;
}

int CommandLine::run(const std::vector<std::string>& args) {
  chosen_ = nullptr;
  if (help_declared_ && !args.empty() && args.front() == "help") return help({args.begin() + 1, args.end()});
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes the words last first
  try {
    app_.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    // CLI11 answers --help before it looks at the words it did not know: a help that hid them
    // would pass a command line that does not work.
    if (const auto unknown = app_.remaining(true); !unknown.empty()) {
      return usage_error("unexpected argument \"" + unknown.front() + "\"");
    }
    std::fputs(app_.help().c_str(), stdout);
    return kExitOk;
  } catch (const CLI::CallForAllHelp&) {
    std::fputs(app_.help("", CLI::AppFormatMode::All).c_str(), stdout);
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    return usage_error(e.what());
  }
  if (!chosen_) return usage_error("no command given");
  return chosen_();
}

int CommandLine::usage_error(const std::string& why) const {
  const std::string command = command_path(chosen_command(app_));
  std::fprintf(stderr, "%s: %s\n%s --help says how to use it.\n", app_.get_name().c_str(), why.c_str(),
               command.c_str());
  return kExitUsage;
}

}  // namespace jetfan
