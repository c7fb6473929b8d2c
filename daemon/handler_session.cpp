#include "handler_session.hpp"

#include <sys/socket.h>

#include <boost/asio/write.hpp>
#include <spdlog/spdlog.h>

#include "encoder.hpp"

namespace jetfan {
namespace asio = boost::asio;

HandlerSession::HandlerSession(Socket socket, ConnectionId id, SessionOwner& owner, Duration hello_timeout)
    : socket_(std::move(socket)), id_(id), owner_(owner), timer_(socket_.get_executor()) {
  peer_ = "connection " + std::to_string(id);
  ucred credentials{};
  socklen_t length = sizeof credentials;
  if (::getsockopt(socket_.native_handle(), SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0) {
    peer_ += ", pid " + std::to_string(credentials.pid);
  }
  timer_.expires_after(hello_timeout);
}

void HandlerSession::start() {
  timer_.async_wait([self = shared_from_this()](const boost::system::error_code& error) {
    if (!error && !self->handler && !self->closed_) {
      self->fail("no HELLO within the hello_timeout; say \"HELLO <handler> 1\" first");
    }
  });
  read();
}

void HandlerSession::read() {
  socket_.async_read_some(asio::buffer(input_), [self = shared_from_this()](const boost::system::error_code& error,
                                                                            std::size_t bytes) {
    if (self->closed_ || self->failing_) return;
    if (error) {
      self->close();
      return;
    }
    self->consume(bytes);
    if (!self->closed_ && !self->failing_) self->read();
  });
}

void HandlerSession::consume(std::size_t bytes) {
  std::string_view input(input_.data(), bytes);
  proto::Command command;
  for (;;) {
    switch (parser_.parse(input, command)) {
      case proto::CommandParser::Result::kNeedMore: return;
      case proto::CommandParser::Result::kError: fail(parser_.error()); return;
      case proto::CommandParser::Result::kCommand: break;
    }
    if (!handler) {
      if (command.verb != proto::Verb::kHello) {
        fail(std::string("expected HELLO first, got ") + proto::to_string(command.verb));
        return;
      }
      if (auto refused = owner_.on_hello(*this, command)) {
        fail(*refused);
        return;
      }
      timer_.cancel();
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

void HandlerSession::flush() {
  if (write_pending_ || out_.empty() || closed_) return;
  write_pending_ = true;
  writing_.swap(out_);
  asio::async_write(socket_, asio::buffer(writing_), [self = shared_from_this()](const boost::system::error_code& error,
                                                                                  std::size_t) {
    self->write_pending_ = false;
    self->writing_.clear();
    if (error) {
      self->close();
    } else if (self->failing_ && self->out_.empty()) {
      self->close();
    } else {
      self->flush();
    }
  });
}

void HandlerSession::fail(const std::string& reason) {
  if (closed_ || failing_) return;
  spdlog::warn("handler {} ({}): protocol error: {}; sent ERR and disconnected it. What it had unconfirmed will be redelivered.",
               handler_name.empty() ? "?" : handler_name, peer_, reason);
  failing_ = true;
  proto::append_err(out_, reason);
  flush();
  // A peer that does not read its ERR must not keep the connection open.
  timer_.expires_after(std::chrono::seconds(1));
  timer_.async_wait([self = shared_from_this()](const boost::system::error_code& error) {
    if (!error) self->close();
  });
}

void HandlerSession::close() {
  if (closed_) return;
  closed_ = true;
  boost::system::error_code ignored;
  timer_.cancel();
  socket_.shutdown(Socket::shutdown_both, ignored);
  socket_.close(ignored);
  owner_.on_closed(*this);
}

}  // namespace jetfan
