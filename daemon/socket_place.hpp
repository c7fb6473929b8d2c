#pragma once
// SocketPlace: where jetfan makes a Unix socket it listens on (socket.path, control.path), and the
// one set of rules both sockets follow.
//
//   - Every directory from "/" down to the socket's own, both as the path is written and as it
//     resolves through symlinks, must be owned by root or by jetfan's own uid, and may be writable
//     by others only with the sticky bit. Anyone else who may write one of them could move jetfan's
//     socket (or the directory holding it) aside and put their own in its place, and a handler or
//     `jetfan reload` would then talk to them.
//   - The socket's directory, and any missing one above it, is made with mode 0750 before anything
//     is bound there.
//   - A socket file already at the path is jetfan's to replace only when nobody listens on it
//     (connect says ECONNREFUSED: left by a run that died). One that answers, or that jetfan may
//     not even connect to (EACCES: another user's), is in use by someone else and never touched.
//   - The socket is made in a private directory beside its place, given its owner, group and mode
//     there, and renamed into place: it never exists at its path with looser permissions.
//
// The rules on one directory are a pure function (why_unsafe_directory), unit-tested; the rest
// does the I/O. Thread: startup only (blocking system calls). Failures throw StartupError naming
// the config key (`key`: "socket.path" or "control.path").

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/local/stream_protocol.hpp>
#include <boost/system/error_code.hpp>

namespace jetfan {

// What stat(2) says of one directory on the way to a socket.
struct DirectoryFacts {
  std::string path;
  std::uint32_t owner = 0;  // st_uid
  std::uint32_t mode = 0;   // st_mode, with the file type
};

// Pure. Why `directory` is no place on the way to a socket of a process whose uid is `self`, as one
// sentence that names the directory and what to change; empty when it is fine.
std::string why_unsafe_directory(const DirectoryFacts& directory, std::uint32_t self);

// Pure. "/", then each longer prefix of the absolute, normalised path `directory`, down to itself.
std::vector<std::string> directory_chain(const std::string& directory);

// Makes the directory of `socket_path` (0750) if it is missing, then checks every directory on the
// way to it by why_unsafe_directory. Throws StartupError (78 for a directory jetfan must not use,
// 69 when one cannot be made or read).
void prepare_socket_directory(std::string_view key, const std::string& socket_path);

// Removes a socket file nobody listens on; throws StartupError when the path is not a socket, or is
// a socket another process serves or that jetfan may not connect to. Nothing there: does nothing.
void clear_stale_socket(std::string_view key, const std::string& path);

struct SocketFileSettings {
  mode_t mode = 0600;
  std::optional<uid_t> owner;
  std::optional<gid_t> group;
};
// Calls `bind_and_listen` with a path in a fresh private directory beside `path`, gives the socket
// made there its owner, group and mode, and renames it to `path`. Throws StartupError when any step
// fails, leaving nothing behind.
void make_socket_in_place(std::string_view key, const std::string& path, const SocketFileSettings& file,
                          const std::function<boost::system::error_code(const std::string& staged)>& bind_and_listen);
// The same, with `acceptor` opened, bound at the staged path and listening.
void make_socket_in_place(std::string_view key, const std::string& path, const SocketFileSettings& file,
                          boost::asio::local::stream_protocol::acceptor& acceptor);

}  // namespace jetfan
