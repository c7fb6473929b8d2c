#include "control_server.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <spdlog/spdlog.h>
#include <boost/asio/write.hpp>

#include <cerrno>
#include <cstring>

#include "logging.hpp"
#include "startup_error.hpp"
#include "tail_record.hpp"
#include "unique_fd.hpp"

namespace jetfan {
namespace asio = boost::asio;
using Protocol = asio::local::stream_protocol;

namespace {

// A command must come soon after connecting: a peer that says nothing must not hold a session.
constexpr Duration kCommandTimeout{5000};
constexpr Duration kAcceptRetry{100};

// As for the handler socket: a stale file is removed, a served one is another jetfan's.
void clear_stale_socket(const std::string& path) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) return;
  if (!S_ISSOCK(info.st_mode)) {
    throw StartupError(kExitConfig, "control.path: " + path + " exists and is not a socket; not touching it");
  }
  UniqueFd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  if (::connect(probe.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0) {
    throw StartupError(kExitUnavailable, "control.path: another process is serving " + path +
                                             " (is jetfan already running for this module?)");
  }
  log_info("socket.stale_removed", {{"path", path}}, "removing stale control socket {} left by an earlier run", path);
  ::unlink(path.c_str());
}

}  // namespace

ControlSession::ControlSession(Socket socket, std::uint64_t id, ControlOwner& owner)
    : socket_(std::move(socket)), id_(id), owner_(owner), deadline_(socket_.get_executor()) {}

void ControlSession::start() {
  JETFAN_ON_IO_THREAD(thread_);
  deadline_.expires_after(kCommandTimeout);
  deadline_.async_wait([self = shared_from_this()](const boost::system::error_code& error) {
    if (!error && !self->closed_ && !self->streaming_ && !self->close_after_write_) {
      self->reply_and_close("ERR no command within 5s; send one line, e.g. STATUS\n");
    }
  });
  read_command();
}

void ControlSession::read_command() {
  socket_.async_read_some(asio::buffer(input_),
                          [self = shared_from_this()](const boost::system::error_code& error, std::size_t bytes) {
                            if (self->closed_ || self->close_after_write_) return;
                            if (error) {
                              self->close();
                              return;
                            }
                            self->command_.append(self->input_.data(), bytes);
                            const auto end = self->command_.find('\n');
                            if (end == std::string::npos) {
                              if (self->command_.size() >= kMaxCommandBytes) {
                                self->reply_and_close("ERR command line longer than 1024 bytes\n");
                              } else {
                                self->read_command();
                              }
                              return;
                            }
                            std::string_view line(self->command_.data(), end);
                            if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
                            self->deadline_.cancel();
                            self->owner_.on_control_command(self, line);
                          });
}

void ControlSession::reply_and_close(const std::string& text) {
  JETFAN_ON_IO_THREAD(thread_);
  if (closed_) return;
  out_.append(text);
  close_after_write_ = true;
  flush();
}

void ControlSession::start_stream(const std::string& first_line) {
  JETFAN_ON_IO_THREAD(thread_);
  streaming_ = true;
  out_.append(first_line);
  flush();
  read_until_closed();
}

void ControlSession::read_until_closed() {
  // Nothing more is expected from the peer; reading tells when it goes.
  socket_.async_read_some(asio::buffer(input_),
                          [self = shared_from_this()](const boost::system::error_code& error, std::size_t) {
                            if (self->closed_) return;
                            if (error) {
                              self->close();
                              return;
                            }
                            self->read_until_closed();
                          });
}

bool ControlSession::stream(std::string_view text) {
  if (closed_) return false;
  if (out_.size() + text.size() > kStreamBufferBytes) {
    ++dropped_unreported_;
    ++dropped_total_;
    return false;
  }
  out_.append(text);
  flush();
  return true;
}

void ControlSession::flush() {
  if (write_pending_ || out_.empty() || closed_) return;
  write_pending_ = true;
  writing_.swap(out_);
  out_.clear();
  asio::async_write(socket_, asio::buffer(writing_),
                    [self = shared_from_this()](const boost::system::error_code& error, std::size_t) {
                      self->write_pending_ = false;
                      self->writing_.clear();
                      if (error) {
                        self->close();
                        return;
                      }
                      // The peer read again: tell it what it missed, before whatever comes next.
                      if (self->dropped_unreported_ > 0) {
                        std::string notice;
                        append_tail_dropped(notice, self->dropped_unreported_);
                        self->dropped_unreported_ = 0;
                        self->out_.insert(0, notice);
                      }
                      if (self->close_after_write_ && self->out_.empty()) {
                        self->close();
                      } else {
                        self->flush();
                      }
                    });
}

void ControlSession::close() {
  JETFAN_ON_IO_THREAD(thread_);
  if (closed_) return;
  closed_ = true;
  boost::system::error_code ignored;
  deadline_.cancel();
  socket_.shutdown(Socket::shutdown_both, ignored);
  socket_.close(ignored);
  if (streaming_) owner_.on_control_closed(*this);
}

ControlServer::ControlServer(asio::io_context& io, const ControlSettings& settings, ControlOwner& owner)
    : path_(settings.path), owner_(owner), acceptor_(io), retry_(io) {
  clear_stale_socket(path_);
  boost::system::error_code error;
  acceptor_.open(Protocol(), error);
  if (!error) acceptor_.bind(Protocol::endpoint(path_), error);
  if (error) {
    throw StartupError(kExitUnavailable, "control.path: cannot create " + path_ + ": " + error.message() +
                                             " (does its directory exist, and may jetfan write there?)");
  }
  bound_ = true;
  if (::chmod(path_.c_str(), settings.mode) != 0) {
    throw StartupError(kExitUnavailable, "control.mode: cannot chmod " + path_ + ": " + std::strerror(errno));
  }
  acceptor_.listen(asio::socket_base::max_listen_connections, error);
  if (error) throw StartupError(kExitUnavailable, "control.path: cannot listen on " + path_ + ": " + error.message());
}

ControlServer::~ControlServer() {
  try {
    stop();
  } catch (const std::exception&) {  // cancelling a timer: nothing to do about it at exit
  }
  if (bound_) ::unlink(path_.c_str());
}

void ControlServer::start() { accept(); }

void ControlServer::stop() {
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  retry_.cancel();
}

void ControlServer::accept() {
  acceptor_.async_accept([this](const boost::system::error_code& error, Protocol::socket socket) {
    if (error == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (error) {
      log_warn("socket.accept_failed",
               {{"path", path_}, {"reason", error.message()}, {"retry_ms", kAcceptRetry.count()}},
               "control socket {}: accept failed: {}; accepting again in {}ms", path_, error.message(),
               kAcceptRetry.count());
      retry_.expires_after(kAcceptRetry);
      retry_.async_wait([this](const boost::system::error_code& cancelled) {
        if (!cancelled) accept();
      });
      return;
    }
    std::make_shared<ControlSession>(std::move(socket), next_id_++, owner_)->start();
    accept();
  });
}

}  // namespace jetfan
