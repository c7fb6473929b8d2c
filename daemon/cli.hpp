#pragma once
// The `jetfan` command line: serve, check, version, help. Returns the process exit status.
// Catches every exception; nothing escapes to main.

namespace jetfan {

int run_cli(int argc, char** argv);

}  // namespace jetfan
