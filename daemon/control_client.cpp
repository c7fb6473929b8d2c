#include "control_client.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>

#include <nlohmann/json.hpp>

#include "startup_error.hpp"
#include "unique_fd.hpp"

namespace jetfan {
namespace {

std::optional<UniqueFd> connect_control(const std::string& path) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof address.sun_path) {
    std::fprintf(stderr, "jetfan: control socket path %s is too long\n", path.c_str());
    return std::nullopt;
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    std::fprintf(stderr, "jetfan: cannot connect to the control socket %s: %s (is jetfan serving with this config?)\n",
                 path.c_str(), std::strerror(errno));
    return std::nullopt;
  }
  return fd;
}

bool send_line(int fd, const std::string& line) {
  std::string_view rest = line;
  while (!rest.empty()) {
    const ssize_t sent = ::send(fd, rest.data(), rest.size(), MSG_NOSIGNAL);
    if (sent <= 0) return false;
    rest.remove_prefix(static_cast<std::size_t>(sent));
  }
  return true;
}

// Copies everything jetfan sends to stdout until it closes; returns its first line (so the caller
// can tell OK from REFUSED or ERR), or all of it with `keep_all`.
std::string copy_reply(int fd, bool keep_all) {
  std::string kept;
  bool first_done = false;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    const std::string_view chunk(buffer, static_cast<std::size_t>(n));
    if (keep_all) {
      kept.append(chunk);
    } else if (!first_done) {
      const auto end = chunk.find('\n');
      kept.append(chunk.substr(0, end));
      first_done = end != std::string_view::npos;
    }
    std::fwrite(buffer, 1, static_cast<std::size_t>(n), stdout);
    std::fflush(stdout);
  }
  return kept;
}

int run(const std::string& path, const std::string& command, std::string& reply, bool keep_all = false) {
  auto fd = connect_control(path);
  if (!fd) return kExitUnavailable;
  if (!send_line(fd->get(), command + "\n")) {
    std::fprintf(stderr, "jetfan: control socket %s closed before the command was sent\n", path.c_str());
    return kExitUnavailable;
  }
  reply = copy_reply(fd->get(), keep_all);
  return kExitOk;
}

}  // namespace

int control_command(const std::string& path, const std::string& command, std::string& last_line) {
  auto fd = connect_control(path);
  if (!fd) return kExitUnavailable;
  if (!send_line(fd->get(), command + "\n")) {
    std::fprintf(stderr, "jetfan: control socket %s closed before the command was sent\n", path.c_str());
    return kExitUnavailable;
  }
  std::string line;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(fd->get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    std::fwrite(buffer, 1, static_cast<std::size_t>(n), stdout);
    std::fflush(stdout);
    for (const char c : std::string_view(buffer, static_cast<std::size_t>(n))) {
      if (c != '\n') {
        line.push_back(c);
      } else if (!line.empty()) {
        last_line = std::move(line);
        line.clear();
      }
    }
  }
  if (!line.empty()) last_line = std::move(line);
  return kExitOk;
}

int control_status(const std::string& path, bool json) {
  std::string reply;
  const int status = run(path, json ? "STATUS JSON" : "STATUS", reply, true);
  if (status != kExitOk) return status;
  if (reply.rfind("ERR", 0) == 0) return kExitSoftware;
  // Answering is not serving: while it connects, binds or drains, a health check must fail.
  std::string state;
  bool ready = true;
  if (json) {
    const auto doc = nlohmann::json::parse(reply, nullptr, false);
    if (doc.is_object() && doc.contains("state") && doc["state"].is_string()) state = doc["state"];
    if (doc.is_object() && doc.contains("ready") && doc["ready"].is_boolean()) ready = doc["ready"];
  } else {
    ready = reply.find("\nready:   no") == std::string::npos;
    // "jetfan <version> <state> consumer ..."
    const auto first = std::string_view(reply).substr(0, reply.find('\n'));
    const auto at = first.find(' ', first.find(' ') + 1);
    if (at != std::string_view::npos) state = std::string(first.substr(at + 1, first.find(' ', at + 1) - at - 1));
  }
  // Serving but not consuming as the only reader (disconnected, another reader, the consumer gone).
  if (state == "serving") return ready ? kExitOk : kExitNotConsuming;
  return kExitTempFail;
}

int control_reload(const std::string& path) {
  std::string first;
  const int status = run(path, "RELOAD", first);
  if (status != kExitOk) return status;
  return first.rfind("OK", 0) == 0 ? kExitOk : kExitConfig;
}

int control_tail(const std::string& path, const std::string& pattern) {
  std::string first;
  const int status = run(path, pattern.empty() ? "TAIL" : "TAIL " + pattern, first);
  if (status != kExitOk) return status;
  return first.rfind("ERR", 0) == 0 ? kExitUsage : kExitOk;
}

int control_unreadable(const std::string& path, std::uint64_t seq) {
  std::string last;
  const int status = control_command(path, seq == 0 ? "UNREADABLE" : "UNREADABLE " + std::to_string(seq), last);
  if (status != kExitOk) return status;
  return last.rfind("OK", 0) == 0 ? kExitOk : 1;
}

int control_step_down(const std::string& path) {
  std::string last;
  const int status = control_command(path, "STEPDOWN", last);
  if (status != kExitOk) return status;
  return last.rfind("OK", 0) == 0 ? kExitOk : 1;
}

int control_pause(const std::string& path, const std::string& handler, bool pause) {
  std::string first;
  const int status = run(path, std::string(pause ? "PAUSE " : "RESUME ") + handler, first);
  if (status != kExitOk) return status;
  return first.rfind("OK", 0) == 0 ? kExitOk : kExitUsage;
}

}  // namespace jetfan
