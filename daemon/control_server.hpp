#pragma once
// ControlServer: jetfan's control socket (`jetfan status`, `tail`, `reload`; protocol in
// daemon/CONTROL.md). A Unix socket apart from the handler socket, made with the same rules: a stale
// file left by a crash is replaced, one another process serves is never touched, the file gets its
// configured mode, and it is removed when the server goes.
//
// At most defaults::kControlMaxSessions sessions live at once (a TAIL is one for as long as it
// streams); one more is answered "ERR busy" and closed at once, so that a flood of connections
// never takes the descriptors handlers need. Root and jetfan's own user are let in past the cap,
// so that no one else's flood locks the operator out.
//
// Each connection sends one command line; the owner answers with reply_and_close() or turns the
// session into a stream (TAIL) with start_stream() and stream(). A stream never holds up jetfan: its
// output is bounded, and what does not fit is dropped for that session alone, counted, and reported
// to it in the stream once it reads again.
//
// Thread: the io_context thread only. Lifetime: sessions are shared_ptr, kept alive by their
// pending operations and by the owner while it streams to them; a session never calls its owner
// from its destructor.

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>

#include <array>
#include <memory>
#include <string>
#include <string_view>

#include "admission.hpp"
#include "config.hpp"
#include "io_thread.hpp"
#include "rate_limited_log.hpp"

namespace jetfan {

class ControlSession;

class ControlOwner {
 public:
  // The command line, without its line end. Called once per session.
  virtual void on_control_command(const std::shared_ptr<ControlSession>& session, std::string_view line) = 0;
  // A session the owner streams to has closed.
  virtual void on_control_closed(ControlSession& session) = 0;

 protected:
  ~ControlOwner() = default;
};

class ControlSession : public std::enable_shared_from_this<ControlSession> {
 public:
  using Socket = boost::asio::local::stream_protocol::socket;
  static constexpr std::size_t kMaxCommandBytes = 1024;
  static constexpr std::size_t kStreamBufferBytes = 256 * 1024;  // per session, not yet written

  // `open` counts the sessions alive (ControlServer's cap); this one adds itself until destroyed.
  ControlSession(Socket socket, std::uint64_t id, ControlOwner& owner, std::shared_ptr<std::size_t> open);
  ~ControlSession();
  ControlSession(const ControlSession&) = delete;
  ControlSession& operator=(const ControlSession&) = delete;

  void start();
  std::uint64_t id() const { return id_; }
  // The process that connected, as the kernel said when the session was made.
  const PeerCredentials& peer() const { return peer_; }
  // Writes `text`, then closes.
  void reply_and_close(const std::string& text);
  // From now on the session streams: stream() appends, the peer closing ends it (on_control_closed).
  void start_stream(const std::string& first_line);
  // Appends `text` if the unwritten output stays within kStreamBufferBytes; else drops and counts it.
  bool stream(std::string_view text);
  std::uint64_t dropped() const { return dropped_total_; }
  void close();

 private:
  void read_command();
  void read_until_closed();
  void flush();

  Socket socket_;
  PeerCredentials peer_;
  std::uint64_t id_;
  ControlOwner& owner_;
  std::shared_ptr<std::size_t> open_;
  IoThread thread_;
  boost::asio::steady_timer deadline_;  // for the command line
  std::string command_;
  std::array<char, 512> input_;
  std::string out_, writing_;
  bool write_pending_ = false;
  bool streaming_ = false;
  bool close_after_write_ = false;
  bool closed_ = false;
  std::uint64_t dropped_unreported_ = 0;
  std::uint64_t dropped_total_ = 0;
};

class ControlServer {
 public:
  // Binds and listens. Throws StartupError when the socket cannot be made.
  ControlServer(boost::asio::io_context& io, const ControlSettings& settings, ControlOwner& owner);
  ~ControlServer();
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  void start();
  void stop();

 private:
  void accept();
  void refuse(boost::asio::local::stream_protocol::socket socket);

  std::string path_;
  ControlOwner& owner_;
  std::shared_ptr<std::size_t> open_ = std::make_shared<std::size_t>(0);  // sessions alive
  RateLimitedLog warnings_{3, std::chrono::minutes(1)};
  boost::asio::local::stream_protocol::acceptor acceptor_;
  boost::asio::steady_timer retry_;
  std::uint64_t next_id_ = 1;
  bool bound_ = false;
};

}  // namespace jetfan
