#include "handler_listener.hpp"

#include <unistd.h>

#include <spdlog/spdlog.h>

#include "logging.hpp"
#include "passed_socket.hpp"
#include "socket_place.hpp"
#include "startup_error.hpp"

namespace jetfan {
namespace asio = boost::asio;
using Protocol = asio::local::stream_protocol;

namespace {

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
  prepare_socket_directory("socket.path", settings.path);
  clear_stale_socket("socket.path", settings.path);
  make_socket_in_place("socket.path", settings.path, {settings.mode, settings.owner, settings.group}, acceptor_);
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
      warnings_.warn(std::chrono::steady_clock::now(), "accept", "socket.accept_failed",
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
