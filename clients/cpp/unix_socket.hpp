#pragma once
// The socket calls the C++ client is made of: connect to a Unix stream socket, send, receive, and
// wait for readiness or a wake-up. Errors are values (an errno); nothing here throws or blocks
// except wait(). Any thread; no state.

#include <cstddef>
#include <string>

#include "unique_fd.hpp"

namespace jetfan::unix_socket {

struct Connected {
  UniqueFd fd;    // non-blocking and close-on-exec; empty on failure
  int error = 0;  // errno of the failed step, ENAMETOOLONG for a path too long for sockaddr_un
};
Connected connect(const std::string& path);

enum class Io { kDone, kWouldBlock, kClosed, kError };
struct IoResult {
  Io status = Io::kDone;
  std::size_t bytes = 0;  // kDone: how many bytes moved (> 0)
  int error = 0;          // kError: errno
};
// One recv()/send() without blocking. kClosed: the peer closed (recv) or reset the connection.
IoResult receive(int fd, char* data, std::size_t size);
IoResult send(int fd, const char* data, std::size_t size);  // never raises SIGPIPE

enum class Woken { kReady, kWake, kTimeout };
// Waits until `fd` has `events` (POLLIN or POLLOUT; an error or hang-up counts as ready) or
// `wake_fd` is readable, for at most `timeout_ms` (-1: no limit). `wake_fd` may be -1.
Woken wait(int fd, short events, int wake_fd, int timeout_ms);

}  // namespace jetfan::unix_socket
