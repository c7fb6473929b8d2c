#pragma once
// One handler connection on jetfan's Unix socket: reads and parses commands, writes frames.
//
// Thread: the io_context thread only. Lifetime: owned by shared_ptr; its pending reads and writes
// keep it alive, and so does the owner's connection table until on_closed.
// Writes coalesce: frames appended to out() between two flush() calls go out in one write, and
// whatever is appended while a write is under way goes in the next one.

#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>

#include <array>
#include <memory>
#include <optional>
#include <string>

#include "command_parser.hpp"
#include "dispatch_core.hpp"

namespace jetfan {

class HandlerSession;

// What a session tells its owner. Called on the io_context thread.
class SessionOwner {
 public:
  virtual ~SessionOwner() = default;
  // A well-formed HELLO. Return why it is refused, or nullopt once the session is registered.
  virtual std::optional<std::string> on_hello(HandlerSession& session, const proto::Command& hello) = 0;
  // Any later command.
  virtual void on_command(HandlerSession& session, const proto::Command& command) = 0;
  // The connection is gone. Called exactly once, for every session that was started.
  virtual void on_closed(HandlerSession& session) = 0;
};

class HandlerSession : public std::enable_shared_from_this<HandlerSession> {
 public:
  using Socket = boost::asio::local::stream_protocol::socket;

  HandlerSession(Socket socket, ConnectionId id, SessionOwner& owner, Duration hello_timeout);

  void start();
  ConnectionId id() const { return id_; }
  // Who is on the other end, for logs: "connection 7, pid 1234".
  const std::string& peer() const { return peer_; }

  // Set by the owner when HELLO is accepted.
  std::optional<std::size_t> handler;
  std::string handler_name;

  std::string& out() { return out_; }
  void flush();
  // Sends ERR with the reason, then closes. Nothing more is read.
  void fail(const std::string& reason);
  void close();

 private:
  void read();
  void consume(std::size_t bytes);

  Socket socket_;
  ConnectionId id_;
  SessionOwner& owner_;
  boost::asio::steady_timer timer_;  // the HELLO deadline, then the deadline for a last ERR
  proto::CommandParser parser_;
  std::array<char, 64 * 1024> input_;
  std::string out_, writing_;
  bool write_pending_ = false;
  bool failing_ = false;
  bool closed_ = false;
  std::string peer_;
};

}  // namespace jetfan
