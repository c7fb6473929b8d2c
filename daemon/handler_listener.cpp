#include "handler_listener.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "logging.hpp"
#include "passed_socket.hpp"
#include "startup_error.hpp"
#include "unique_fd.hpp"

namespace jetfan {
namespace asio = boost::asio;
using Protocol = asio::local::stream_protocol;

namespace {

// The socket's directory: made (with a safe mode) if missing; refused if anyone may write there
// without the sticky bit, since then anyone could replace jetfan's socket with their own.
void prepare_directory(const std::filesystem::path& directory) {
  struct stat info {};
  if (::stat(directory.c_str(), &info) != 0) {
    std::error_code error;
    std::filesystem::create_directories(directory, error);
    if (error || ::chmod(directory.c_str(), defaults::kSocketDirectoryMode) != 0) {
      throw StartupError(kExitUnavailable, "socket.path: cannot make its directory " + directory.string() + ": " +
                                               (error ? error.message() : std::strerror(errno)));
    }
    log_info("socket.directory_made", {{"path", directory.string()}}, "made the socket's directory {} (mode {:o})",
             directory.string(), defaults::kSocketDirectoryMode);
    return;
  }
  if (!S_ISDIR(info.st_mode))
    throw StartupError(kExitConfig, "socket.path: " + directory.string() + " is not a directory");
  if ((info.st_mode & S_IWOTH) && !(info.st_mode & S_ISVTX)) {
    throw StartupError(kExitConfig, "socket.path: its directory " + directory.string() +
                                        " may be written by anyone, without the sticky bit: another user could put "
                                        "their own socket in jetfan's place. Use a directory only jetfan (and its "
                                        "group) may write, such as /run/jetfan.");
  }
}

// A socket file left by a jetfan that died is removed; one that still answers is another jetfan's.
void clear_stale_socket(const std::string& path) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) return;
  if (!S_ISSOCK(info.st_mode)) {
    throw StartupError(kExitConfig, "socket.path: " + path + " exists and is not a socket; not touching it");
  }
  UniqueFd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  if (::connect(probe.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0) {
    throw StartupError(kExitUnavailable, "socket.path: another process is serving " + path +
                                             " (is jetfan already running for this module?)");
  }
  log_info("socket.stale_removed", {{"path", path}}, "removing stale socket {} left by an earlier run", path);
  ::unlink(path.c_str());
}

// After a failed accept (out of file descriptors, say) accepting again at once would spin while the
// cause lasts; a tenth of a second lets connections close meanwhile.
constexpr Duration kAcceptRetry{100};

}  // namespace

HandlerListener::HandlerListener(asio::io_context& io, const SocketSettings& settings)
    : settings_(settings), acceptor_(io), retry_(io) {
  boost::system::error_code error;
  if (const auto passed = take_passed_socket(settings.path)) {
    // systemd made the socket and keeps it while jetfan restarts: handlers queue in its backlog.
    acceptor_.assign(Protocol(), *passed, error);
    if (error)
      throw StartupError(kExitUnavailable, "socket.path: cannot use the socket systemd passed: " + error.message());
    log_info("socket.passed", {{"path", settings.path}}, "socket {}: using the listening socket systemd passed",
             settings.path);
    return;
  }
  const std::filesystem::path path(settings.path);
  prepare_directory(path.parent_path());
  clear_stale_socket(settings.path);
  // The socket is made in a private directory, given its owner and mode there, then renamed into
  // place: at no instant does settings.path exist with looser permissions than configured.
  std::string staging = path.parent_path().string() + "/.jf-XXXXXX";
  if (!::mkdtemp(staging.data())) {
    throw StartupError(kExitUnavailable, "socket.path: cannot make a private directory beside " + settings.path + ": " +
                                             std::strerror(errno));
  }
  const std::string staged = staging + "/s";
  auto remove_staging = [&] {
    ::unlink(staged.c_str());
    ::rmdir(staging.c_str());
  };
  acceptor_.open(Protocol(), error);
  if (!error) acceptor_.bind(Protocol::endpoint(staged), error);
  if (!error) acceptor_.listen(asio::socket_base::max_listen_connections, error);
  if (error) {
    remove_staging();
    throw StartupError(kExitUnavailable, "socket.path: cannot create " + settings.path + ": " + error.message() +
                                             " (may jetfan write in " + path.parent_path().string() + "?)");
  }
  if ((settings.owner || settings.group) &&
      ::chown(staged.c_str(), settings.owner ? *settings.owner : static_cast<uid_t>(-1),
              settings.group ? *settings.group : static_cast<gid_t>(-1)) != 0) {
    const std::string why = std::strerror(errno);
    remove_staging();
    throw StartupError(kExitUnavailable, "socket.owner/group: cannot give " + settings.path + " its owner and group: " +
                                             why + " (changing the owner needs root or CAP_CHOWN)");
  }
  if (::chmod(staged.c_str(), settings.mode) != 0 || ::rename(staged.c_str(), settings.path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    remove_staging();
    throw StartupError(kExitUnavailable,
                       "socket.path: cannot put the socket in place at " + settings.path + ": " + why);
  }
  ::rmdir(staging.c_str());
  bound_ = true;
}

HandlerListener::~HandlerListener() {
  try {
    stop();
  } catch (const std::exception&) {  // cancelling a timer: nothing to do about it at exit
  }
  if (bound_) ::unlink(settings_.path.c_str());
}

void HandlerListener::start(Accepted accepted) {
  accepted_ = std::move(accepted);
  accept();
}

void HandlerListener::stop() {
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  retry_.cancel();
}

void HandlerListener::accept() {
  acceptor_.async_accept([this](const boost::system::error_code& error, Protocol::socket socket) {
    if (error == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (error) {
      // Accepting again at once would spin while the cause (EMFILE, say) lasts.
      log_warn("socket.accept_failed",
               {{"path", settings_.path}, {"reason", error.message()}, {"retry_ms", kAcceptRetry.count()}},
               "socket {}: accept failed: {}; accepting again in {}ms", settings_.path, error.message(),
               kAcceptRetry.count());
      retry_.expires_after(kAcceptRetry);
      retry_.async_wait([this](const boost::system::error_code& cancelled) {
        if (!cancelled) accept();
      });
      return;
    }
    accepted_(std::move(socket));
    accept();
  });
}

}  // namespace jetfan
