#pragma once
// The client side of the control socket, for `jetfan status`, `jetfan reload` and `jetfan tail`:
// sends one command line and copies what jetfan answers to stdout. Blocking; used by the CLI only.

#include <cstdint>
#include <string>

namespace jetfan {

// STATUS or STATUS JSON. Exit status: 0 while jetfan serves, 75 while it is not serving (still
// connecting and binding, or draining), 69 when the control socket cannot be reached.
int control_status(const std::string& path, bool json);
// RELOAD. Exit status: 0 applied, 78 refused (the reply says why), 69 unreachable.
int control_reload(const std::string& path);
// TAIL [PATTERN], until jetfan closes the connection or the process is interrupted. 0, 64 (bad
// pattern), 69 unreachable.
int control_tail(const std::string& path, const std::string& pattern);
// jetfan pause / resume --handler NAME: prints the answer; 0 if done, 64 if no such handler.
int control_pause(const std::string& path, const std::string& handler, bool pause);
// jetfan step-down (STEPDOWN): prints the answer; 0 if done, 1 when jetfan has no pin to give up.
int control_step_down(const std::string& path);
// jetfan unreadable [--seq N] (UNREADABLE [SEQ]): prints the answer; 0 listed or done, 1 when jetfan
// answered ERR (nothing done), 69 unreachable.
int control_unreadable(const std::string& path, std::uint64_t seq);

// Sends `command`, copies the reply to stdout as it comes, and keeps its last line in `last_line`.
// 0 once jetfan closed the connection, 69 unreachable.
int control_command(const std::string& path, const std::string& command, std::string& last_line);

}  // namespace jetfan
