#include "socket_place.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "defaults.hpp"
#include "logging.hpp"
#include "startup_error.hpp"
#include "unique_fd.hpp"

namespace jetfan {
namespace fs = std::filesystem;

namespace {

std::string octal(std::uint32_t mode) { return fmt::format("{:04o}", mode & 07777); }

[[noreturn]] void refuse(int status, std::string_view key, const std::string& what) {
  throw StartupError(status, std::string(key) + ": " + what);
}

DirectoryFacts facts_of(std::string_view key, const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    refuse(kExitUnavailable, key, "cannot look at " + path + " on the way to the socket: " + std::strerror(errno));
  }
  return {path, info.st_uid, info.st_mode};
}

void check_chain(std::string_view key, const std::string& directory) {
  const auto self = static_cast<std::uint32_t>(::geteuid());
  for (const auto& step : directory_chain(directory)) {
    const std::string why = why_unsafe_directory(facts_of(key, step), self);
    if (!why.empty()) refuse(kExitConfig, key, why);
  }
}

}  // namespace

std::string why_unsafe_directory(const DirectoryFacts& directory, std::uint32_t self) {
  const std::string& path = directory.path;
  if (!S_ISDIR(directory.mode)) return path + " is not a directory";
  if (directory.owner != 0 && directory.owner != self) {
    return fmt::format(
        "{} belongs to uid {}, neither root nor jetfan's own uid ({}): its owner could move jetfan's socket aside "
        "and put their own in its place. Use a directory that root or jetfan's user owns, such as /run/jetfan",
        path, directory.owner, self);
  }
  if ((directory.mode & S_IWOTH) && !(directory.mode & S_ISVTX)) {
    return fmt::format(
        "{} (mode {}) may be written by anyone, without the sticky bit: another user could move jetfan's socket "
        "aside and put their own in its place. Use a directory only jetfan (and its group) may write, such as "
        "/run/jetfan, or give this one the sticky bit (chmod +t {})",
        path, octal(directory.mode), path);
  }
  return {};
}

std::vector<std::string> directory_chain(const std::string& directory) {
  std::vector<std::string> chain;
  fs::path prefix;
  for (const auto& part : fs::path(directory)) {
    prefix /= part;
    chain.push_back(prefix.string());
  }
  return chain;
}

void prepare_socket_directory(std::string_view key, const std::string& socket_path) {
  std::error_code error;
  const fs::path absolute = fs::absolute(socket_path, error).lexically_normal();
  if (error) refuse(kExitUnavailable, key, "cannot make " + socket_path + " absolute: " + error.message());
  const std::string directory = absolute.parent_path().string();
  // Each directory is checked before anything is made in it, so nothing is made in a place that is
  // then refused; a directory jetfan makes is its own and safe by construction.
  const auto self = static_cast<std::uint32_t>(::geteuid());
  for (const auto& step : directory_chain(directory)) {
    struct stat info {};
    if (::stat(step.c_str(), &info) == 0) {
      const std::string why = why_unsafe_directory({step, info.st_uid, info.st_mode}, self);
      if (!why.empty()) refuse(kExitConfig, key, why);
      continue;
    }
    if (errno != ENOENT) refuse(kExitUnavailable, key, "cannot look at " + step + ": " + std::strerror(errno));
    if (::mkdir(step.c_str(), defaults::kSocketDirectoryMode) != 0 && errno != EEXIST) {
      refuse(kExitUnavailable, key, "cannot make the socket's directory " + step + ": " + std::strerror(errno));
    }
    if (::chmod(step.c_str(), defaults::kSocketDirectoryMode) != 0) {  // as asked, whatever the umask
      refuse(kExitUnavailable, key, "cannot give " + step + " its mode: " + std::strerror(errno));
    }
    log_info("socket.directory_made", {{"path", step}, {"key", std::string(key)}},
             "made the socket's directory {} (mode {:o})", step, defaults::kSocketDirectoryMode);
  }
  // As written, each step was checked where a symlink points; the directories a symlink leads
  // through are checked here.
  const fs::path resolved = fs::canonical(directory, error);
  if (error) refuse(kExitUnavailable, key, "cannot resolve " + directory + ": " + error.message());
  if (resolved != fs::path(directory)) check_chain(key, resolved.string());
}

void clear_stale_socket(std::string_view key, const std::string& path) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) {
    if (errno == ENOENT) return;
    refuse(kExitUnavailable, key, "cannot look at " + path + ": " + std::strerror(errno));
  }
  if (!S_ISSOCK(info.st_mode)) refuse(kExitConfig, key, path + " exists and is not a socket; not touching it");
  sockaddr_un address{};
  if (path.size() >= sizeof address.sun_path) refuse(kExitConfig, key, path + " is too long for a Unix socket");
  // Non-blocking: a listener whose backlog is full answers EAGAIN rather than holding jetfan up.
  UniqueFd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  if (::connect(probe.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0 || errno == EAGAIN) {
    refuse(kExitUnavailable, key,
           "another process is serving " + path + " (is jetfan already running for this module?); not touching it");
  }
  const int why = errno;
  if (why == ENOENT) return;  // gone meanwhile
  if (why == EACCES || why == EPERM) {
    refuse(kExitUnavailable, key,
           path + " is a socket jetfan may not connect to (" + std::strerror(why) +
               "): it is another user's, in use or not; not touching it. If it is stale, its owner or root "
               "may remove it; otherwise choose another path");
  }
  if (why != ECONNREFUSED) {
    refuse(kExitUnavailable, key,
           "cannot tell whether " + path + " is in use (" + std::strerror(why) + "); not touching it");
  }
  log_info("socket.stale_removed", {{"path", path}, {"key", std::string(key)}},
           "removing stale socket {} left by an earlier run (nobody listens on it)", path);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    refuse(kExitUnavailable, key, "cannot remove the stale socket " + path + ": " + std::strerror(errno));
  }
}

void make_socket_in_place(std::string_view key, const std::string& path, const SocketFileSettings& file,
                          const std::function<boost::system::error_code(const std::string& staged)>& bind_and_listen) {
  const fs::path place(path);
  std::string staging = (place.has_parent_path() ? place.parent_path().string() : std::string(".")) + "/.jf-XXXXXX";
  if (!::mkdtemp(staging.data())) {
    refuse(kExitUnavailable, key, "cannot make a private directory beside " + path + ": " + std::strerror(errno));
  }
  const std::string staged = staging + "/s";
  auto fail = [&](const std::string& what) {
    ::unlink(staged.c_str());
    ::rmdir(staging.c_str());
    refuse(kExitUnavailable, key, what);
  };
  if (const auto error = bind_and_listen(staged)) {
    fail("cannot create " + path + ": " + error.message() + " (may jetfan write in " + place.parent_path().string() +
         "?)");
  }
  if ((file.owner || file.group) && ::chown(staged.c_str(), file.owner ? *file.owner : static_cast<uid_t>(-1),
                                            file.group ? *file.group : static_cast<gid_t>(-1)) != 0) {
    fail("cannot give " + path + " its owner and group: " + std::strerror(errno) +
         " (changing the owner needs root or CAP_CHOWN)");
  }
  if (::chmod(staged.c_str(), file.mode) != 0) fail("cannot give " + path + " its mode: " + std::strerror(errno));
  if (::rename(staged.c_str(), path.c_str()) != 0) {
    fail("cannot put the socket in place at " + path + ": " + std::strerror(errno));
  }
  ::rmdir(staging.c_str());
}

void make_socket_in_place(std::string_view key, const std::string& path, const SocketFileSettings& file,
                          boost::asio::local::stream_protocol::acceptor& acceptor) {
  using Protocol = boost::asio::local::stream_protocol;
  make_socket_in_place(key, path, file, [&acceptor](const std::string& staged) {
    boost::system::error_code failed;
    acceptor.open(Protocol(), failed);
    if (!failed) acceptor.bind(Protocol::endpoint(staged), failed);
    if (!failed) acceptor.listen(boost::asio::socket_base::max_listen_connections, failed);
    return failed;
  });
}

}  // namespace jetfan
