#pragma once
// HandlerSession: one connection on jetfan's handler socket. Reads and parses commands, writes
// frames, and keeps the peer within its limits. Protocol decisions are the owner's; this class
// moves bytes and watches time.
//
// Limits it enforces on its own:
//   - HELLO within hello_timeout (a peer that says nothing is closed);
//   - the command line limit (CommandParser);
//   - bytes made for this peer and not yet read by it (OutputQueue::owned_bytes) stay within
//     max_output_buffer; past it the peer is cut off (its deliveries fail and are redelivered);
//   - a handler silent for idle_timeout with nothing in flight is sent PING, and closed as wedged
//     if nothing comes back within ping_timeout.
//
// Thread: the io_context thread only (checked in debug and JETFAN_CHECKS builds).
// Lifetime: owned by shared_ptr; its pending reads, writes and timers keep it alive, and so does
// the owner's connection table until on_closed.
// Writes coalesce: frames appended between two flush() calls go out in one gather write, and
// whatever is appended while a write is under way goes in the next one.

#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "admission.hpp"
#include "command_parser.hpp"
#include "config.hpp"
#include "dispatch_core.hpp"
#include "io_thread.hpp"
#include "message_bytes.hpp"
#include "output_queue.hpp"

namespace jetfan {

class HandlerSession;

// What a session tells its owner, and asks it. Called on the io_context thread.
class SessionOwner {
 public:
  // A well-formed HELLO. The owner either calls session.admit() or returns why it refuses.
  virtual std::optional<std::string> on_hello(HandlerSession& session, const proto::Command& hello) = 0;
  // Any command after an admitted HELLO. The owner may leave acting on it to on_input_consumed.
  virtual void on_command(HandlerSession& session, const proto::Command& command) = 0;
  // Every complete command of one read has been passed on (confirmations that arrive together are
  // acted on together). Not called once the session is closed, nor before it is admitted.
  virtual void on_input_consumed(HandlerSession& session) = 0;
  // The session is cutting the peer off (protocol error, limit, silence); the owner logs it.
  virtual void on_failing(HandlerSession& session, const std::string& why) = 0;
  // Whether the session has deliveries in flight (a busy handler may be silent).
  virtual bool busy(const HandlerSession& session) const = 0;
  // The connection is gone, or lingers after its ERR (see fail): nothing more from it reaches the
  // owner, and the owner drops it. Called exactly once, for every session that was started.
  virtual void on_closed(HandlerSession& session) = 0;

 protected:
  ~SessionOwner() = default;
};

// What the sockets of one handler's instances did since jetfan started: system calls and bytes
// each way, after HELLO. The dispatcher keeps one per handler name (across reloads and instances);
// each admitted session adds to it.
struct SocketIo {
  std::uint64_t writes = 0;  // sendmsg calls that wrote something
  std::uint64_t written_bytes = 0;
  std::uint64_t reads = 0;  // reads that brought something
  std::uint64_t read_bytes = 0;
};

class HandlerSession : public std::enable_shared_from_this<HandlerSession> {
 public:
  using Socket = boost::asio::local::stream_protocol::socket;

  // Reads the peer's credentials from the kernel at once. `limits` must outlive the session.
  HandlerSession(Socket socket, ConnectionId id, SessionOwner& owner, const SocketSettings& limits);

  void start();
  ConnectionId id() const { return id_; }
  const PeerCredentials& credentials() const { return credentials_; }
  // Who is on the other end, for logs: "connection 7, pid 1234, uid 1000".
  const std::string& peer() const { return peer_; }

  // The declared handler this connection is an instance of, once admitted, and the protocol
  // version it speaks (proto::negotiated_version). Set once.
  // `max_publish_body`: the largest PUB body it keeps (the server's max_payload); a larger one is
  // read and dropped, and answered too-large.
  void admit(std::size_t handler, std::string name, std::uint32_t version, std::size_t max_publish_body);
  // From now on its reads and writes count into `io` (shared; it may outlive the session).
  void count_io_into(std::shared_ptr<SocketIo> io) { io_ = std::move(io); }
  std::uint32_t version() const { return version_; }
  // A reload moved its handler to another index, or removed it (nullopt: no longer an instance).
  void reassign(std::optional<std::size_t> handler) { handler_ = handler; }
  std::optional<std::size_t> handler() const { return handler_; }
  const std::string& handler_name() const { return handler_name_; }

  // Frames to send; they go out at the next flush(). A MSG's body is shared, not copied. READY
  // announces the handler's max_inflight as its max-unconfirmed. A MSG is laid out in the
  // connection's version: version 2 adds `published_ns` (0: unknown), the message's subject and
  // `server_deliveries`. `deliveries` is the handler's own count (RetryBudget::deliveries_to),
  // `server_deliveries` the server's. Version 3 adds `traceparent` (DispatchTracing's delivery span),
  // sent as "-" when empty.
  void send_ready(std::uint32_t max_inflight, const std::vector<std::string>& patterns);
  void send_msg(DeliveryId id, std::string_view key, std::uint64_t stream_seq, std::uint64_t deliveries,
                std::uint64_t server_deliveries, std::uint64_t published_ns, const MessageBytesPtr& message,
                std::string_view traceparent = {});
  void send_pong();
  // The largest PUB body a session keeps while jetfan does not know the server's max_payload: the
  // server's default.
  static constexpr std::size_t kDefaultMaxPublishBody = 1024 * 1024;
  // Version 3 on: the answers to a PUB (PROTOCOL.md, "Publishing").
  void send_pubok(std::uint64_t request, std::string_view stream, std::uint64_t seq, bool duplicate);
  void send_puberr(std::uint64_t request, proto::PublishError code, std::string_view reason);
  // Stops reading the peer (`hold`: its publishes wait for the server as long as it may let them)
  // or goes on; what one read brought is handled either way.
  void hold_input(bool hold);
  void flush();
  // Sends ERR with the reason, then closes, lingering so that the ERR reaches a peer that is still
  // writing: once ERR is written the writing side is shut down (the peer reads ERR, then the end),
  // and what the peer still sends is read and discarded until it closes, for at most 1 s (a close
  // at once would fail the peer's writes, and a peer that gives up on that never reads the ERR).
  // Nothing read after the ERR reaches the owner, and on_closed comes once the ERR is written: the
  // lingering session keeps itself alive, and its descriptor, for at most that second.
  void fail(const std::string& reason);
  // The same, without logging a protocol error: jetfan itself ends the connection (a reload).
  void dismiss(const std::string& reason);
  // Closes at once; on_closed is called before it returns.
  void close();
  // Closed, or closing after ERR.
  bool ending() const { return closed_ || failing_; }

 private:
  void read();
  void consume(std::size_t bytes);
  void consume_commands(std::string_view input);
  // The peer is gone (a read failed): reads what it sent before it went, which may still be in
  // the socket's buffer, then closes. Its last confirmations count.
  void close_after_peer_left();
  // Writes what is left of the batch being written, until the socket's buffer is full (then waits
  // until it can take more) or all is written; then write_done runs, posted.
  void write_batch();
  void write_done(const boost::system::error_code& error);
  // A write failed: nothing more is written, and the read side, which sees the end after the
  // peer's last bytes, closes the session (or the linger timer does).
  void on_write_failed();
  // The ERR is written: shut down the writing side and discard input until the peer closes.
  void linger();
  void arm_idle();
  void on_idle();

  Socket socket_;
  ConnectionId id_;
  SessionOwner& owner_;
  const SocketSettings& limits_;
  IoThread thread_;
  PeerCredentials credentials_;
  std::string peer_;
  std::optional<std::size_t> handler_;
  std::string handler_name_;
  std::shared_ptr<SocketIo> io_;  // null until admitted
  std::uint32_t version_ = proto::kVersion1;
  boost::asio::steady_timer timer_;  // HELLO deadline, then idle and PING deadlines, then the last ERR's
  proto::CommandParser parser_;
  std::array<char, 64 * 1024> input_;
  OutputQueue out_;
  bool heard_ = false;   // input since the idle timer was last armed
  bool pinged_ = false;  // a PING is out and unanswered
  bool read_pending_ = false;
  bool input_held_ = false;  // hold_input(true): no read is started
  bool consuming_ = false;   // a read's bytes are being parsed and handled
  bool write_pending_ = false;
  bool lingering_ = false;   // ERR written; input is discarded until the peer closes
  bool owner_told_ = false;  // on_closed was called
  bool write_failed_ = false;
  bool failing_ = false;
  bool closed_ = false;
};

}  // namespace jetfan
