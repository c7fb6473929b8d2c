// jetfan-exec: `jetfan exec` as a program of its own (exec_handler.hpp), for tests that run it
// without the daemon's command line.
#include <string>
#include <vector>

#include "exec_handler.hpp"

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  return jetfan::run_exec(args);
}
