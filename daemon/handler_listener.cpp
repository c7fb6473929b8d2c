#include "handler_listener.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "passed_socket.hpp"
#include "startup_error.hpp"
#include "unique_fd.hpp"

namespace jetfan {
namespace asio = boost::asio;
using Protocol = asio::local::stream_protocol;

namespace {

// A socket file left by a jetfan that died is removed; one that still answers is another jetfan's.
void clear_stale_socket(const std::string& path) {
  struct stat info{};
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
  spdlog::info("removing stale socket {} left by an earlier run", path);
  ::unlink(path.c_str());
}

// After a failed accept (out of file descriptors, say) accepting again at once would spin while the
// cause lasts; a tenth of a second lets connections close meanwhile.
constexpr Duration kAcceptRetry{100};

}  // namespace

HandlerListener::HandlerListener(asio::io_context& io, const SocketSettings& settings, SessionOwner& owner)
    : settings_(settings), owner_(owner), acceptor_(io), retry_(io) {
  boost::system::error_code error;
  if (const auto passed = take_passed_socket(settings.path)) {
    // systemd made the socket and keeps it while jetfan restarts: handlers queue in its backlog.
    acceptor_.assign(Protocol(), *passed, error);
    if (error) throw StartupError(kExitUnavailable, "socket.path: cannot use the socket systemd passed: " + error.message());
    spdlog::info("socket {}: using the listening socket systemd passed", settings.path);
    return;
  }
  clear_stale_socket(settings.path);
  acceptor_.open(Protocol(), error);
  if (!error) acceptor_.bind(Protocol::endpoint(settings.path), error);
  if (error) {
    throw StartupError(kExitUnavailable, "socket.path: cannot create " + settings.path + ": " + error.message() +
                                             " (does its directory exist, and may jetfan write there?)");
  }
  bound_ = true;
  if (::chmod(settings.path.c_str(), settings.mode) != 0) {
    throw StartupError(kExitUnavailable, "socket.mode: cannot chmod " + settings.path + ": " + std::strerror(errno));
  }
  acceptor_.listen(asio::socket_base::max_listen_connections, error);
  if (error) throw StartupError(kExitUnavailable, "socket.path: cannot listen on " + settings.path + ": " + error.message());
}

HandlerListener::~HandlerListener() {
  stop();
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
      spdlog::warn("socket {}: accept failed: {}; accepting again in {}ms", settings_.path, error.message(),
                   kAcceptRetry.count());
      retry_.expires_after(kAcceptRetry);
      retry_.async_wait([this](const boost::system::error_code& cancelled) {
        if (!cancelled) accept();
      });
      return;
    }
    accepted_(std::make_shared<HandlerSession>(std::move(socket), next_id_++, owner_, settings_.hello_timeout));
    accept();
  });
}

}  // namespace jetfan
