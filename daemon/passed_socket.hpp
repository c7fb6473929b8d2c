#pragma once
// Sockets systemd passed at start (socket activation, sd_listen_fds(3)). jetfan takes the one bound
// to the path it is configured to serve; without systemd there are none, and jetfan binds its own.
//
// The environment is read once, at the first call, and cleared (LISTEN_FDS and friends), so no
// child inherits it. Thread: main thread, at startup.

#include <optional>
#include <string>

namespace jetfan {

// The passed listening Unix stream socket bound to `path`, if there is one. Ownership passes to the
// caller. Throws StartupError (78) when systemd passed sockets but none is bound to `path`.
std::optional<int> take_passed_socket(const std::string& path);

}  // namespace jetfan
