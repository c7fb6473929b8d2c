#include "control_server.hpp"

#include <unistd.h>

#include <array>

#include <spdlog/spdlog.h>
#include <boost/asio/write.hpp>

#include "logging.hpp"
#include "peer_credentials.hpp"
#include "socket_place.hpp"
#include "startup_error.hpp"
#include "tail_record.hpp"

namespace jetfan {
namespace asio = boost::asio;
using Protocol = asio::local::stream_protocol;

namespace {

// A command must come soon after connecting: a peer that says nothing must not hold a session.
constexpr Duration kCommandTimeout{5000};
constexpr Duration kAcceptRetry{100};

// Root and jetfan's own user get in past the cap: others' connections must never lock the operator
// out, and these two could stop jetfan anyway.
bool is_operator(const PeerCredentials& peer) { return peer.uid == 0 || peer.uid == ::geteuid(); }

}  // namespace

ControlSession::ControlSession(Socket socket, std::uint64_t id, ControlOwner& owner, std::shared_ptr<std::size_t> open)
    : socket_(std::move(socket)),
      peer_(read_peer_credentials(socket_.native_handle())),
      id_(id),
      owner_(owner),
      open_(std::move(open)),
      deadline_(socket_.get_executor()) {
  ++*open_;
}

ControlSession::~ControlSession() { --*open_; }

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
  prepare_socket_directory("control.path", path_);
  clear_stale_socket("control.path", path_);
  make_socket_in_place("control.path", path_, {settings.mode, std::nullopt, std::nullopt}, acceptor_);
  bound_ = true;
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
      warnings_.warn(std::chrono::steady_clock::now(), "accept", "socket.accept_failed",
                     {{"path", path_}, {"reason", error.message()}, {"retry_ms", kAcceptRetry.count()}},
                     "control socket {}: accept failed: {}; accepting again in {}ms", path_, error.message(),
                     kAcceptRetry.count());
      retry_.expires_after(kAcceptRetry);
      retry_.async_wait([this](const boost::system::error_code& cancelled) {
        if (!cancelled) accept();
      });
      return;
    }
    if (*open_ >= defaults::kControlMaxSessions && !is_operator(read_peer_credentials(socket.native_handle()))) {
      refuse(std::move(socket));
    } else {
      std::make_shared<ControlSession>(std::move(socket), next_id_++, owner_, open_)->start();
    }
    accept();
  });
}

void ControlServer::refuse(Protocol::socket socket) {
  warnings_.warn(
      std::chrono::steady_clock::now(), "full", "control.connection_refused", {{"path", path_}, {"open", *open_}},
      "control socket {}: {} control connections open; answering one more \"ERR busy\" and closing it", path_, *open_);
  // A line fits an empty socket buffer; a peer that does not read it loses nothing.
  static constexpr std::string_view kBusy = "ERR busy: too many control connections open; try again shortly\n";
  boost::system::error_code ignored;
  socket.non_blocking(true, ignored);
  socket.write_some(asio::buffer(kBusy), ignored);
  socket.shutdown(Protocol::socket::shutdown_send, ignored);
  // Closing with an unread command sends a reset, which can cost the peer the answer.
  std::array<char, ControlSession::kMaxCommandBytes> scratch{};
  socket.read_some(asio::buffer(scratch), ignored);
  socket.close(ignored);
}

}  // namespace jetfan
