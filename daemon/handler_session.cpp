#include "handler_session.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <climits>

#include <boost/asio/post.hpp>

#include "encoder.hpp"
#include "peer_credentials.hpp"

namespace jetfan {
namespace asio = boost::asio;

namespace {

// A peer that does not read its ERR must not keep the connection open.
constexpr Duration kErrLinger{1000};

}  // namespace

HandlerSession::HandlerSession(Socket socket, ConnectionId id, SessionOwner& owner, const SocketSettings& limits)
    : socket_(std::move(socket)),
      id_(id),
      owner_(owner),
      limits_(limits),
      credentials_(read_peer_credentials(socket_.native_handle())),
      peer_("connection " + std::to_string(id) + ", pid " + std::to_string(credentials_.pid) + ", uid " +
            std::to_string(credentials_.uid)),
      timer_(socket_.get_executor()) {}

void HandlerSession::start() {
  JETFAN_ON_IO_THREAD(thread_);
  timer_.expires_after(limits_.hello_timeout);
  timer_.async_wait([self = shared_from_this()](const boost::system::error_code& error) {
    if (!error && !self->handler_ && !self->closed_) {
      self->fail("no HELLO within the hello_timeout; say \"HELLO <handler> 1\" first");
    }
  });
  read();
}

void HandlerSession::admit(std::size_t handler, std::string name, std::uint32_t version, std::size_t max_publish_body) {
  JETFAN_ON_IO_THREAD(thread_);
  handler_ = handler;
  handler_name_ = std::move(name);
  version_ = version;
  parser_.set_version(version);  // the lines after HELLO are in the version READY names
  parser_.set_max_publish_body(max_publish_body);
}

void HandlerSession::read() {
  read_pending_ = true;
  socket_.async_read_some(asio::buffer(input_),
                          [self = shared_from_this()](const boost::system::error_code& error, std::size_t bytes) {
                            self->read_pending_ = false;
                            if (self->closed_) return;
                            if (self->lingering_) {
                              // Discarding: the end of the peer's input is the end of the session.
                              if (error) {
                                self->close();
                              } else {
                                self->read();
                              }
                              return;
                            }
                            if (self->failing_) return;
                            if (error) {
                              self->close_after_peer_left();
                              return;
                            }
                            self->heard_ = true;
                            self->pinged_ = false;  // any input answers a PING: the peer is alive
                            if (self->io_) {
                              ++self->io_->reads;
                              self->io_->read_bytes += bytes;
                            }
                            self->consuming_ = true;
                            self->consume(bytes);
                            self->consuming_ = false;
                            if (!self->closed_ && !self->failing_ && !self->input_held_) self->read();
                          });
}

void HandlerSession::consume(std::size_t bytes) {
  consume_commands(std::string_view(input_.data(), bytes));
  if (!closed_ && handler_) owner_.on_input_consumed(*this);
}

void HandlerSession::consume_commands(std::string_view input) {
  proto::Command command;
  for (;;) {
    switch (parser_.parse(input, command)) {
      case proto::CommandParser::Result::kNeedMore:
        return;
      case proto::CommandParser::Result::kError:
        fail(parser_.error());
        return;
      case proto::CommandParser::Result::kCommand:
        break;
    }
    if (!handler_) {
      if (command.verb != proto::Verb::kHello) {
        fail(std::string("expected HELLO first, got ") + proto::to_string(command.verb));
        return;
      }
      if (auto refused = owner_.on_hello(*this, command)) {
        fail(*refused);
        return;
      }
      arm_idle();
      continue;
    }
    if (command.verb == proto::Verb::kHello) {
      fail("HELLO was already said on this connection");
      return;
    }
    owner_.on_command(*this, command);
    if (closed_ || failing_) return;
  }
}

void HandlerSession::arm_idle() {
  heard_ = false;
  timer_.expires_after(pinged_ ? limits_.ping_timeout : limits_.idle_timeout);
  timer_.async_wait([self = shared_from_this()](const boost::system::error_code& error) {
    if (!error && !self->closed_ && !self->failing_) self->on_idle();
  });
}

void HandlerSession::on_idle() {
  if (pinged_ && !heard_) {
    fail("no answer to PING within the ping_timeout; closing a handler that seems wedged");
    return;
  }
  // Silence while deliveries are in flight is work, and ack_timeout watches it.
  if (!heard_ && !owner_.busy(*this)) {
    pinged_ = true;
    proto::append_ping(out_.owned());
    out_.appended();
    flush();
  } else {
    pinged_ = false;
  }
  arm_idle();
}

void HandlerSession::send_ready(std::uint32_t max_inflight, const std::vector<std::string>& patterns) {
  JETFAN_ON_IO_THREAD(thread_);
  proto::append_ready(out_.owned(), version_, handler_name_, max_inflight, patterns);
  out_.appended();
}

void HandlerSession::send_msg(DeliveryId id, std::string_view key, std::uint64_t stream_seq, std::uint64_t deliveries,
                              std::uint64_t server_deliveries, std::uint64_t published_ns,
                              const MessageBytesPtr& message, std::string_view traceparent) {
  JETFAN_ON_IO_THREAD(thread_);
  const std::size_t header_bytes = message->headers().size();
  const std::size_t total_bytes = header_bytes + message->payload().size();
  // Only this line is the connection's own; the body after it is shared by every recipient.
  if (version_ >= proto::kVersion3) {
    proto::append_msg3_line(out_.owned(), id, key, stream_seq, deliveries, header_bytes, total_bytes, published_ns,
                            message->subject(), server_deliveries, traceparent);
  } else if (version_ >= proto::kVersion2) {
    proto::append_msg2_line(out_.owned(), id, key, stream_seq, deliveries, header_bytes, total_bytes, published_ns,
                            message->subject(), server_deliveries);
  } else {
    proto::append_msg_line(out_.owned(), id, key, stream_seq, deliveries, header_bytes, total_bytes);
  }
  out_.appended();
  out_.append_body(message);
  out_.append("\r\n");
}

void HandlerSession::send_pong() {
  JETFAN_ON_IO_THREAD(thread_);
  proto::append_pong(out_.owned());
  out_.appended();
}

void HandlerSession::send_pubok(std::uint64_t request, std::string_view stream, std::uint64_t seq, bool duplicate) {
  JETFAN_ON_IO_THREAD(thread_);
  proto::append_pubok(out_.owned(), request, stream, seq, duplicate);
  out_.appended();
}

void HandlerSession::hold_input(bool hold) {
  JETFAN_ON_IO_THREAD(thread_);
  const bool was_held = input_held_;
  input_held_ = hold;
  // While a read's bytes are being consumed, the read after it is started when they are done: one
  // started now would read into the buffer they are in.
  if (was_held && !hold && !read_pending_ && !consuming_ && !closed_ && !failing_) read();
}

void HandlerSession::send_puberr(std::uint64_t request, proto::PublishError code, std::string_view reason) {
  JETFAN_ON_IO_THREAD(thread_);
  proto::append_puberr(out_.owned(), request, proto::to_string(code), reason);
  out_.appended();
}

void HandlerSession::flush() {
  JETFAN_ON_IO_THREAD(thread_);
  if (closed_) return;
  if (out_.owned_bytes() > limits_.max_output_buffer && !failing_) {
    // The peer does not read what it is sent (or asks for more than it reads, as a PING flood
    // does). Writing ERR would only add to it.
    failing_ = true;
    owner_.on_failing(*this, "it does not read what jetfan sends: " + std::to_string(out_.owned_bytes()) +
                                 " bytes are waiting, more than socket.max_output_buffer (" +
                                 std::to_string(limits_.max_output_buffer) + ")");
    close();
    return;
  }
  if (write_pending_ || write_failed_ || out_.empty()) return;
  write_pending_ = true;
  out_.take_batch();
  write_batch();
}

// asio::async_write hands at most 16 buffers to each sendmsg, which is 8 messages (a MSG is a line
// and a body). A batch of hundreds then costs one system call per 8; this writes up to IOV_MAX
// buffers in each.
void HandlerSession::write_batch() {
  for (;;) {
    const auto pieces = out_.unwritten(IOV_MAX);
    msghdr message{};
    message.msg_iov = const_cast<iovec*>(pieces.data());
    message.msg_iovlen = pieces.size();
    const ssize_t sent = ::sendmsg(socket_.native_handle(), &message, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent < 0 && errno == EINTR) continue;
    if (sent > 0 && io_) {
      ++io_->writes;
      io_->written_bytes += static_cast<std::uint64_t>(sent);
    }
    if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      socket_.async_wait(Socket::wait_write, [self = shared_from_this()](const boost::system::error_code& error) {
        if (error) {
          self->write_done(error);
        } else {
          self->write_batch();
        }
      });
      return;
    }
    if (sent < 0 || out_.written(static_cast<std::size_t>(sent))) {
      // Posted, as asio's own completions are: what flush()'s caller does next happens first.
      const boost::system::error_code error(sent < 0 ? errno : 0, boost::system::system_category());
      asio::post(socket_.get_executor(), [self = shared_from_this(), error] { self->write_done(error); });
      return;
    }
  }
}

void HandlerSession::write_done(const boost::system::error_code& error) {
  write_pending_ = false;
  out_.done_writing();
  if (error) {
    on_write_failed();
  } else if (failing_ && out_.empty()) {
    linger();
  } else {
    flush();
  }
}

void HandlerSession::fail(const std::string& reason) {
  JETFAN_ON_IO_THREAD(thread_);
  if (closed_ || failing_) return;
  owner_.on_failing(*this, reason);
  dismiss(reason);
}

void HandlerSession::dismiss(const std::string& reason) {
  JETFAN_ON_IO_THREAD(thread_);
  if (closed_ || failing_) return;
  failing_ = true;
  proto::append_err(out_.owned(), reason);
  out_.appended();
  flush();
  timer_.expires_after(kErrLinger);
  timer_.async_wait([self = shared_from_this()](const boost::system::error_code& error) {
    if (!error) self->close();
  });
}

// A handler that confirms and then closes while jetfan is writing to it makes the write fail
// (EPIPE) with its ACK not yet handled: still in the socket's buffer, or already read by a read
// whose completion is queued behind the write's. Closing on the write's error would count that
// delivery as failed and send it to the handler again, although it confirmed it. So the read
// side ends the session: it handles the peer's last bytes first.
void HandlerSession::on_write_failed() {
  if (closed_) return;
  if (failing_) {
    close();
    return;
  }
  write_failed_ = true;
  timer_.expires_after(kErrLinger);
  timer_.async_wait([self = shared_from_this()](const boost::system::error_code& error) {
    if (!error) self->close();
  });
}

// A close while the peer is still writing fails its writes (EPIPE), and a peer that gives up on a
// failed write, as Node's sockets do, never reads the ERR it was sent. So the peer gets the end of
// jetfan's output after the ERR, and jetfan reads what it still sends until it closes its side (or
// the linger ends).
void HandlerSession::linger() {
  if (closed_ || lingering_) return;
  lingering_ = true;
  boost::system::error_code error;
  socket_.shutdown(Socket::shutdown_send, error);
  if (error) {
    close();
    return;
  }
  timer_.expires_after(kErrLinger);
  timer_.async_wait([self = shared_from_this()](const boost::system::error_code& cancelled) {
    if (!cancelled) self->close();
  });
  if (!read_pending_) read();
  // The owner is done with it now: its connection slot is free, and what it had unconfirmed is redelivered.
  owner_told_ = true;
  owner_.on_closed(*this);
}

void HandlerSession::close_after_peer_left() {
  JETFAN_ON_IO_THREAD(thread_);
  if (closed_) return;
  boost::system::error_code error;
  socket_.non_blocking(true, error);
  while (!error && !closed_ && !failing_) {
    const std::size_t bytes = socket_.read_some(asio::buffer(input_), error);
    if (bytes > 0) consume(bytes);
  }
  close();
}

void HandlerSession::close() {
  JETFAN_ON_IO_THREAD(thread_);
  if (closed_) return;
  closed_ = true;
  boost::system::error_code ignored;
  timer_.cancel();
  socket_.shutdown(Socket::shutdown_both, ignored);
  socket_.close(ignored);
  if (!owner_told_) {
    owner_told_ = true;
    owner_.on_closed(*this);
  }
}

}  // namespace jetfan
