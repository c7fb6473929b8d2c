#pragma once
// HandlerListener: jetfan's Unix socket. Takes the one systemd passed (socket activation) if there
// is one; otherwise creates it (replacing a stale one left by a crash, but never one another process
// is serving), sets its mode, and removes the socket file when destroyed. Accepts handler
// connections and hands each one's socket on (to Dispatcher::accept, which makes it a session).
//
// Thread: the io_context thread only.

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>

#include <functional>
#include <memory>

#include "config.hpp"
#include "rate_limited_log.hpp"

namespace jetfan {

class HandlerListener {
 public:
  using Socket = boost::asio::local::stream_protocol::socket;
  using Accepted = std::function<void(Socket)>;

  // Binds and listens. Throws StartupError when the socket cannot be made. `settings` must outlive
  // the listener.
  HandlerListener(boost::asio::io_context& io, const SocketSettings& settings);
  ~HandlerListener();

  // Accepts until stop(); each new connection is handed to `accepted`.
  void start(Accepted accepted);
  void stop();

 private:
  void accept();

  const SocketSettings& settings_;
  boost::asio::local::stream_protocol::acceptor acceptor_;
  boost::asio::steady_timer retry_;  // after a failed accept (out of file descriptors, say)
  RateLimitedLog warnings_{3, std::chrono::minutes(1)};
  Accepted accepted_;
  bool bound_ = false;  // jetfan made the socket file (and removes it); not so for a passed one
};

}  // namespace jetfan
