// The jetfan command line (cli.hpp) as its grammar says, and the documents that describe it held to
// that grammar: every command and flag of make_jetfan_command_line() must be completed by the bash
// and zsh completions and named in the man page, with every exit status; the man page's advice
// on the mode of a file holding a secret is the one jetfan's warning gives.

#include "cli.hpp"

#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "exec_handler.hpp"
#include "nats_auth.hpp"
#include "startup_error.hpp"

using namespace jetfan;

namespace {

struct Command {
  std::vector<std::string> path;         // e.g. {"pause"}; {} for jetfan itself
  std::vector<std::string> flags;        // "--config", "-c", "--help", ...
  std::vector<std::string> value_flags;  // those that take a value
  std::vector<std::string> commands;     // its own commands
  std::string name() const {
    std::string text = "jetfan";
    for (const auto& word : path) text += " " + word;
    return text;
  }
};

void collect(const CLI::App& app, const std::vector<std::string>& path, std::vector<Command>& out) {
  Command command{path, {}, {}, {}};
  for (const CLI::Option* option : app.get_options([](const CLI::Option* o) { return o->nonpositional(); })) {
    for (const auto& name : option->get_lnames()) {
      command.flags.push_back("--" + name);
      if (option->get_expected_max() > 0) command.value_flags.push_back("--" + name);
    }
    for (const auto& name : option->get_snames()) command.flags.push_back("-" + name);
  }
  const auto subcommands = app.get_subcommands([](const CLI::App*) { return true; });
  for (const CLI::App* sub : subcommands) command.commands.push_back(sub->get_name());
  out.push_back(command);
  for (const CLI::App* sub : subcommands) {
    auto sub_path = path;
    sub_path.push_back(sub->get_name());
    collect(*sub, sub_path, out);
  }
}

std::vector<Command> all_commands() {
  const auto cli = make_jetfan_command_line();
  std::vector<Command> commands;
  collect(cli->app(), {}, commands);
  return commands;
}

int run(const std::vector<std::string>& words) { return make_jetfan_command_line()->run(words); }

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) FAIL("cannot read " << path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Runs a shell command; its standard output.
std::string shell_output(const std::string& command) {
  std::string output;
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buffer[4096];
  for (std::size_t n = 0; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) output.append(buffer, n);
  ::pclose(pipe);
  return output;
}

std::string quoted(const std::string& word) {
  std::string text = "'";
  for (char c : word) text += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return text + "'";
}

// What the bash completion offers for the last of `words` (jetfan first), one per line.
std::set<std::string> bash_completes(const std::vector<std::string>& words) {
  std::string array;
  for (const auto& word : words) array += quoted(word) + " ";
  const std::string script = "source " + quoted(JETFAN_BASH_COMPLETION) + "; COMP_WORDS=(" + array +
                             "); COMP_CWORD=" + std::to_string(words.size() - 1) +
                             "; _jetfan; printf '%s\\n' \"${COMPREPLY[@]}\"";
  std::istringstream lines(shell_output("bash --norc --noprofile -c " + quoted(script)));
  std::set<std::string> offered;
  for (std::string line; std::getline(lines, line);) offered.insert(line);
  return offered;
}

// The man page as text: roff's escaped "-" and font changes undone.
std::string man_page_text() {
  std::string text = file_text(JETFAN_MAN_PAGE);
  text = std::regex_replace(text, std::regex(R"(\\-)"), "-");
  text = std::regex_replace(text, std::regex(R"(\\f[BIRP])"), "");
  return text;
}

// `flag` as a word of its own: "--config" in "--config=" or "{-c+,--config=}", not in "--configs".
std::regex word(const std::string& flag) { return std::regex("(^|[^-a-z])" + flag + "([^-a-z]|$)"); }

std::string section(const std::string& text, const std::string& name) {
  const auto start = text.find("\n.SH " + name + "\n");
  if (start == std::string::npos) FAIL("the man page has no section " << name);
  const auto end = text.find("\n.SH ", start + 1);
  return text.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

}  // namespace

TEST_CASE("cli: an unknown flag or command, or a missing value, is a usage error (64)", "[unit]") {
  CHECK(run({}) == kExitUsage);
  CHECK(run({"--no-such-flag"}) == kExitUsage);
  CHECK(run({"no-such-command"}) == kExitUsage);
  CHECK(run({"check", "--no-such-flag"}) == kExitUsage);
  CHECK(run({"serve", "--config"}) == kExitUsage);
  CHECK(run({"status", "--config", "a.yaml", "extra"}) == kExitUsage);
  CHECK(run({"pause", "--config", "a.yaml"}) == kExitUsage);  // --handler is required
  // --help does not hide a flag jetfan does not know.
  CHECK(run({"serve", "--no-such-flag", "--help"}) == kExitUsage);
}

TEST_CASE("cli: help prints jetfan's help or the named command's, and never runs it", "[unit]") {
  CHECK(run({"help"}) == kExitOk);
  CHECK(run({"help", "serve"}) == kExitOk);  // not serve itself, which needs --config (64)
  CHECK(run({"help", "dlq", "list"}) == kExitOk);
  CHECK(run({"help", "no-such-command"}) == kExitUsage);
  CHECK(run({"help", "dlq", "nope"}) == kExitUsage);
}

TEST_CASE("cli: every command has its --help, and every flag takes --flag=value", "[unit]") {
  for (const auto& command : all_commands()) {
    INFO(command.name());
    auto words = command.path;
    words.emplace_back("--help");
    CHECK(run(words) == kExitOk);
    for (const auto& flag : command.value_flags) {
      INFO(flag);
      auto with_value = command.path;
      with_value.push_back(flag + "=x");
      with_value.emplace_back("--help");
      CHECK(run(with_value) == kExitOk);
    }
  }
  // The value is taken: a missing file is a config error (78), not a usage error.
  CHECK(run({"check", "--config=/nonexistent/jetfan.yaml"}) == kExitConfig);
  CHECK(run({"check", "-c", "/nonexistent/jetfan.yaml"}) == kExitConfig);
}

TEST_CASE("completion: bash completes every command and every flag of each", "[unit]") {
  REQUIRE_FALSE(bash_completes({"jetfan", ""}).empty());
  for (const auto& command : all_commands()) {
    INFO(command.name() << " in " << JETFAN_BASH_COMPLETION);
    auto words = command.path;
    words.insert(words.begin(), "jetfan");
    words.emplace_back("");
    const auto offered = bash_completes(words);
    for (const auto& sub : command.commands) CHECK(offered.count(sub) == 1);
    for (const auto& flag : command.flags) {
      // Only long names are offered; a short one is another spelling of one of them.
      if (flag.starts_with("--")) CHECK(offered.count(flag) == 1);
    }
  }
  // Values: log levels, and after exec's "--" a command from $PATH.
  CHECK(bash_completes({"jetfan", "serve", "--log-level", ""}).count("debug") == 1);
  CHECK(bash_completes({"jetfan", "serve", "--log-level", "=", ""}).count("warn") == 1);
  CHECK(bash_completes({"jetfan", "exec", "--handler", "h", "--", "tru"}).count("true") == 1);
}

TEST_CASE("completion: zsh completes every command and every flag of each", "[unit]") {
  const std::string script = file_text(JETFAN_ZSH_COMPLETION);
  CHECK(shell_output("zsh -n " + quoted(JETFAN_ZSH_COMPLETION) + " && echo parsed") == "parsed\n");
  for (const auto& command : all_commands()) {
    INFO(command.name() << " in " << JETFAN_ZSH_COMPLETION);
    // Top-level commands are listed as 'NAME:description'; each one's flags in its case arm.
    for (const auto& sub : command.commands) CHECK_THAT(script, Catch::Contains("'" + sub + ":"));
    std::string arm = script;
    if (!command.path.empty()) {
      const auto start = script.find("(" + command.path.back() + ")\n");
      REQUIRE(start != std::string::npos);
      arm = script.substr(start, script.find(";;", start) - start);
    }
    for (const auto& flag : command.flags) {
      INFO(flag);
      CHECK(std::regex_search(arm, word(flag)));
    }
  }
}

TEST_CASE("man page: names every command, every flag and every exit status", "[unit]") {
  const std::string text = man_page_text();
  const std::string synopsis = section(text, "SYNOPSIS");
  const std::string commands = section(text, "COMMANDS");
  const std::string exit_status = section(text, "EXIT STATUS");
  for (const auto& command : all_commands()) {
    INFO(command.name() << " in " << JETFAN_MAN_PAGE);
    if (!command.path.empty()) {
      std::string words;
      for (const auto& word : command.path) words += (words.empty() ? "" : " ") + word;
      CHECK_THAT(synopsis, Catch::Contains(".B jetfan " + words + "\n"));
      CHECK_THAT(commands, Catch::Contains(".B " + words + "\n"));
    }
    for (const auto& flag : command.flags) {
      INFO(flag);
      CHECK(std::regex_search(text, word(flag)));
    }
  }
  std::set<int> statuses(std::begin(kExitStatuses), std::end(kExitStatuses));
  statuses.insert(std::begin(kExecExitStatuses), std::end(kExecExitStatuses));
  for (int status : statuses) {
    INFO("exit status " << status);
    CHECK_THAT(exit_status, Catch::Contains(".B " + std::to_string(status) + "\n"));
  }
}

// The commands an OPTIONS entry names in its "(status, tail, ...)" line; empty when it has none.
std::set<std::string> commands_of_option(const std::string& entry) {
  std::set<std::string> out;
  std::istringstream lines(entry);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(".RB (", 0) != 0) continue;
    std::string plain;
    for (const char c : line.substr(4)) {
      if (c != '"' && c != '\\' && c != '(' && c != ')') plain += c;
    }
    std::istringstream items(plain);
    for (std::string item; std::getline(items, item, ',');) {
      const auto first = item.find_first_not_of(' ');
      const auto last = item.find_last_not_of(' ');
      if (first != std::string::npos) out.insert(item.substr(first, last - first + 1));
    }
  }
  return out;
}

TEST_CASE("man page: each command is an entry of its own, and each flag's entry names every command that takes it",
          "[unit]") {
  const std::string text = man_page_text();
  const std::string commands = section(text, "COMMANDS");
  std::vector<std::string> entries;
  const std::string options = section(text, "OPTIONS");
  for (std::size_t at = options.find("\n.TP\n"); at != std::string::npos;) {
    const auto next = options.find("\n.TP\n", at + 1);
    entries.push_back(options.substr(at + 5, next == std::string::npos ? std::string::npos : next - at - 5));
    at = next;
  }
  for (const auto& command : all_commands()) {
    if (command.path.empty()) continue;
    std::string words;
    for (const auto& word : command.path) words += (words.empty() ? "" : " ") + word;
    INFO(command.name() << " in " << JETFAN_MAN_PAGE);
    // The entry begins with .TP: one without runs into the entry before it.
    CHECK((commands.find(".TP\n.B " + words + "\n") != std::string::npos ||
           commands.find(".TP\n.BI " + words + " ") != std::string::npos));
    for (const auto& flag : command.flags) {
      if (flag == "--help" || flag == "-h" || flag == "--config" || flag == "-c") continue;  // every command's
      INFO(flag);
      const std::string& escaped = flag;  // man_page_text() has undone troff's \-
      const auto entry = std::find_if(entries.begin(), entries.end(), [&](const std::string& e) {
        const std::string head = e.substr(0, e.find('\n')) + "\n";
        const auto at = head.find(escaped);
        return at != std::string::npos && std::string(" \n\"").find(head[at + escaped.size()]) != std::string::npos;
      });
      REQUIRE(entry != entries.end());
      const auto named = commands_of_option(*entry);
      CHECK((named.empty() || named.count(words) == 1));
    }
  }
}

TEST_CASE("man page: its advice on a secret file's mode is the warning's", "[unit]") {
  const auto warning = exposure_warning({"nats.token_file", "/etc/jetfan/builder.token", "a NATS token"}, 0640);
  REQUIRE(warning);
  std::smatch advice;
  REQUIRE(std::regex_search(*warning, advice, std::regex("chmod ([0-7]+) ")));
  const std::string mode = advice[1];
  const std::string text = man_page_text();
  CHECK_THAT(text, Catch::Contains("chmod " + mode + " "));
  // No other mode is advised for a file that may hold a secret.
  const std::regex advised(R"((chmod|mode) 0?([0-7]{3}))");
  for (std::sregex_iterator it(text.begin(), text.end(), advised), end; it != end; ++it) {
    INFO((*it)[0]);
    CHECK(std::string((*it)[2]) == mode);
  }
}
