#include "unix_socket.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>

namespace jetfan::unix_socket {

Connected connect(const std::string& path) {
  sockaddr_un address{};
  if (path.size() >= sizeof(address.sun_path)) return {UniqueFd(), ENAMETOOLONG};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return {UniqueFd(), errno};
  // Connected while still blocking: a Unix socket connect either succeeds or fails at once, and a
  // non-blocking one could report EAGAIN for a full backlog, which is only a slower "refused".
  int result;
  do {
    result = ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address));
  } while (result != 0 && errno == EINTR);
  if (result != 0) return {UniqueFd(), errno};
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags | O_NONBLOCK) != 0) return {UniqueFd(), errno};
  return {std::move(fd), 0};
}

namespace {

IoResult from(ssize_t n, bool receiving) {
  if (n > 0) return {Io::kDone, static_cast<std::size_t>(n), 0};
  if (n == 0 && receiving) return {Io::kClosed, 0, 0};
  if (errno == EAGAIN || errno == EWOULDBLOCK) return {Io::kWouldBlock, 0, 0};
  if (errno == ECONNRESET || errno == EPIPE) return {Io::kClosed, 0, errno};
  return {Io::kError, 0, errno};
}

}  // namespace

IoResult receive(int fd, char* data, std::size_t size) {
  ssize_t n;
  do {
    n = ::recv(fd, data, size, 0);
  } while (n < 0 && errno == EINTR);
  return from(n, true);
}

IoResult send(int fd, const char* data, std::size_t size) {
  ssize_t n;
  do {
    n = ::send(fd, data, size, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  return from(n, false);
}

Woken wait(int fd, short events, int wake_fd, int timeout_ms) {
  pollfd fds[2] = {{fd, events, 0}, {wake_fd, POLLIN, 0}};
  const nfds_t count = wake_fd >= 0 ? 2 : 1;
  for (;;) {
    const int n = ::poll(fds, count, timeout_ms);
    if (n < 0 && errno == EINTR) continue;  // a signal, maybe the one that called stop(): look again
    if (n <= 0) return Woken::kTimeout;
    if (count == 2 && fds[1].revents != 0) return Woken::kWake;
    return Woken::kReady;
  }
}

}  // namespace jetfan::unix_socket
