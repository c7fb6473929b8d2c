#pragma once
// HandlerListener: jetfan's Unix socket. Takes the one systemd passed (socket activation) if there
// is one; otherwise creates it (replacing a stale one left by a crash, but never one another process
// is serving), sets its mode, and removes the socket file when destroyed. Accepts handler
// connections.
//
// Thread: the io_context thread only.

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>

#include <functional>
#include <memory>

#include "config.hpp"
#include "handler_session.hpp"

namespace jetfan {

class HandlerListener {
 public:
  using Accepted = std::function<void(std::shared_ptr<HandlerSession>)>;

  // Binds and listens. Throws StartupError when the socket cannot be made.
  HandlerListener(boost::asio::io_context& io, const SocketSettings& settings, SessionOwner& owner);
  ~HandlerListener();

  // Accepts until stop(); each new session is handed to `accepted`, which starts it.
  void start(Accepted accepted);
  void stop();

 private:
  void accept();

  const SocketSettings& settings_;
  SessionOwner& owner_;
  boost::asio::local::stream_protocol::acceptor acceptor_;
  boost::asio::steady_timer retry_;  // after a failed accept (out of file descriptors, say)
  Accepted accepted_;
  ConnectionId next_id_ = 1;
  bool bound_ = false;  // jetfan made the socket file (and removes it); not so for a passed one
};

}  // namespace jetfan
