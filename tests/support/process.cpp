#include "process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <utility>

extern char** environ;

namespace jetfan::testing {

Process::Process(std::vector<std::string> argv, const std::string& out_file, const std::string& err_file,
                 const SpawnExtras& extras) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out_file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (err_file.empty()) {
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
  } else {
    posix_spawn_file_actions_addopen(&actions, 2, err_file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  }
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  for (const auto& [from, to] : extras.fds) posix_spawn_file_actions_adddup2(&actions, from, to);
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  std::vector<std::string> env_strings(extras.env);
  std::vector<char*> env;
  for (char** e = environ; *e; ++e) env.push_back(*e);
  for (auto& e : env_strings) env.push_back(e.data());
  env.push_back(nullptr);
  const int error = posix_spawnp(&pid_, args[0], &actions, nullptr, args.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  if (error != 0) throw std::runtime_error("cannot start " + argv[0]);
}

Process::Process(Process&& other) noexcept : pid_(std::exchange(other.pid_, -1)), status_(other.status_) {}

Process::~Process() { kill_now(); }

void Process::kill_now() {
  if (pid_ > 0 && !status_) {
    ::kill(pid_, SIGKILL);
    wait(std::chrono::seconds(10));
  }
}

void Process::signal(int signal) {
  if (pid_ > 0 && !status_) ::kill(pid_, signal);
}

std::optional<int> Process::wait(std::chrono::milliseconds timeout) {
  if (status_ || pid_ <= 0) return status_;
  wait_until(
      [&] {
        int raw = 0;
        const pid_t done = ::waitpid(pid_, &raw, WNOHANG);
        if (done == pid_) status_ = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
        return status_.has_value();
      },
      timeout);
  return status_;
}

bool Process::running() { return !wait(std::chrono::milliseconds(0)); }

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::size_t count_lines_containing(const std::string& text, const std::string& part) {
  std::size_t count = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) count += line.find(part) != std::string::npos;
  return count;
}

int run_jetfan(const std::vector<std::string>& args, const std::string& dir, std::string& output) {
  std::vector<std::string> argv = {JETFAN_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  const std::string out_file = dir + "/cli.out";
  std::optional<int> status;
  {
    Process process(argv, out_file);
    status = process.wait(std::chrono::seconds(20));
  }
  output = read_file(out_file);
  std::remove(out_file.c_str());
  return status.value_or(-1);
}

}  // namespace jetfan::testing
