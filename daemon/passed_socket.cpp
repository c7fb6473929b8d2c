#include "passed_socket.hpp"

#include <sys/socket.h>
#include <systemd/sd-daemon.h>

#include <vector>

#include "startup_error.hpp"

namespace jetfan {
namespace {

std::vector<int>& passed() {
  static std::vector<int> fds = [] {
    std::vector<int> out;
    const int count = sd_listen_fds(1);
    out.reserve(count > 0 ? static_cast<std::size_t>(count) : 0);
    for (int i = 0; i < count; ++i) out.push_back(SD_LISTEN_FDS_START + i);
    return out;
  }();
  return fds;
}

}  // namespace

std::optional<int> take_passed_socket(const std::string& path) {
  auto& fds = passed();
  if (fds.empty()) return std::nullopt;
  for (auto it = fds.begin(); it != fds.end(); ++it) {
    if (sd_is_socket_unix(*it, SOCK_STREAM, 1, path.c_str(), 0) > 0) {
      const int fd = *it;
      fds.erase(it);
      return fd;
    }
  }
  throw StartupError(kExitConfig, "socket.path: systemd passed " + std::to_string(fds.size()) +
                                      " listening socket(s), but none is bound to " + path +
                                      "; make ListenStream= in jetfan@.socket name the same path as socket.path");
}

}  // namespace jetfan
