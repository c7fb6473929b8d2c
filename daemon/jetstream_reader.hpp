#pragma once
// JetStreamReader: jetfan's one connection to NATS and its message path: the Upstream
// (upstream.hpp) the Dispatcher talks to. What is asked before serving, waiting for the answer, is
// asked on the same connection by JetStreamAdmin (the consumer's info, dead-letter streams) and
// StreamReader (messages read straight from the stream), through NatsBlocking. What to ask for and
// what to answer is decided elsewhere (PullLedger, DispatchCore); this class only talks, and
// classifies what comes in: a message's key, sequence, delivery count and header block are read
// here, once, so that nothing past the seam needs cnats. The header block is passed on as the
// server sent it, a view into the natsMsg (received_headers.hpp says how it is found and checked),
// or, where cnats has parsed it already, rebuilt from cnats's parse.
//
// It reads with plain pull requests to $JS.API.CONSUMER.MSG.NEXT.<stream>.<durable>, each with its
// own reply subject <inbox>.<id> under one private inbox. cnats's own Fetch is not used: in 3.4.1 it can
// ignore its timeout and overrun its batch array, and it does not re-send a pull after a reconnect.
//
// Threads and lifetimes:
//   - Every public method runs on the io_context thread (checked in debug and JETFAN_CHECKS builds).
//   - cnats's socket I/O runs on that thread too (NatsEventLoop): the io thread reads the server's
//     socket, cnats routes what it read to the inbox's synchronous subscription, and on_read() hands
//     it to the listener at once: from the server's socket to a handler's on one thread.
//     Calls that wait for the server's reply (JetStreamAdmin's, StreamReader's, the flush in close)
//     wait on a short-lived thread while the io thread feeds cnats (wait_off_thread).
//   - cnats still calls back on its own threads (reconnect, async callbacks, the answers to
//     publish()). Those callbacks only record what happened in CnatsCallbacks, under its lock, and
//     post one drain into the io_context.
//   - cnats may run a callback after Close has returned. The pointer to CnatsCallbacks cnats holds
//     is therefore backed by a reference that keeps it alive until the connection's closed callback.
//   - After close() begins, disconnect and reconnect callbacks are ignored. close() destroys the
//     subscription only after the connection is closed (see close()).
//   - A connection cnats dropped while reading what the server sent (a protocol error: a MSG whose
//     subject it cannot parse) is replaced by a new one once cnats has reconnected (renew()): with
//     an external event loop cnats 3.4.1 keeps its parser's state across a reconnect, and every
//     later connection would break at its first message.
// Ownership: the reader owns the connection. Every message it hands out is the receiver's
// (MessageBytesPtr, owning the natsMsg); replies need only the message's reply subject.

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config.hpp"
#include "io_thread.hpp"
#include "message_bytes.hpp"
#include "nats_blocking.hpp"
#include "nats_event_loop.hpp"
#include "nats_handles.hpp"
#include "pull_ledger.hpp"
#include "spent_messages.hpp"
#include "upstream.hpp"

namespace jetfan {

class JetStreamReader final : public Upstream, public NatsBlocking {
 public:
  // Every message's bytes are counted in `arena`, which must outlive them.
  JetStreamReader(boost::asio::io_context& io, const Config& config, MessageBytesArena& arena);
  ~JetStreamReader();
  JetStreamReader(const JetStreamReader&) = delete;
  JetStreamReader& operator=(const JetStreamReader&) = delete;

  // The version of the NATS client library jetfan runs with (cnats's own, at run time).
  static std::string client_version();

  // Connects, retrying with capped backoff while no server answers and logging each attempt.
  // Runs `io` between attempts so signals are handled. Returns false if `stopping` turned true.
  // Throws StartupError for failures that waiting cannot fix (credentials refused, TLS).
  bool connect(const std::function<bool()>& stopping);

  // Subscribes the private inbox (once connected, before the first pull).
  void subscribe();

  // Upstream. send_pull's failures are logged.
  void listen(UpstreamListener* listener) override;
  bool send_pull(const PullRequest& request) override;
  bool send_probe(std::uint64_t id) override;  // answered on <inbox>.p<id>
  void ack(const MessageBytes& message) override;
  void nak(const MessageBytes& message, Duration delay) override;
  void term(const MessageBytes& message) override;
  void wip(const MessageBytes& message) override;
  bool publish(std::uint64_t id, std::string_view subject, std::string_view headers, std::string_view payload) override;
  bool api_request(std::uint64_t id, std::string_view subject, std::string_view body) override;  // on <pinbox>.a<id>
  void close(Duration timeout) override;

  // NatsBlocking, for JetStreamAdmin and StreamReader before serving.
  natsConnection* connection() const override { return connection_.get(); }
  std::size_t max_payload() const override;
  void wait_off_thread(const std::function<void()>& call, Duration timeout) override;

  struct CnatsCallbacks;  // what cnats threads hand over; defined in the .cpp

 private:
  NatsOptionsPtr make_options();
  void on_callbacks();  // takes what cnats threads recorded, on the io thread
  void on_read();       // takes what a read routed to the inbox, on the io thread
  // Hands one message from the inbox to the listener, as what it is.
  void take(NatsMsgPtr message);
  // Sets the header block of `parts` (a message of `raw`, which its owner holds): a view of the
  // block as received, or one rebuilt from cnats's parse (received_headers.hpp).
  void find_headers(natsMsg* raw, MessageParts& parts);
  void reply(const MessageBytes& message, const char* body, std::size_t length);
  // The subscription publish() and api_request() are answered on, made on first use.
  bool answer_subscription();
  // Subscribes the private inbox (inbox_) on the connection.
  natsStatus subscribe_inbox();
  // Closes the connection and makes a new one (see the threads and lifetimes above); false when the
  // new one could not be made (tried again after nats.reconnect_wait).
  bool renew();
  void renew_later();

  boost::asio::io_context& io_;
  const Config& config_;
  MessageBytesArena& arena_;
  IoThread thread_;
  std::shared_ptr<CnatsCallbacks> callbacks_;
  // cnats's socket I/O on `io` (its external event-loop API); the inbox is a synchronous
  // subscription drained after each read. Before connection_: it outlives the connection.
  NatsEventLoop loop_;
  SpentMessages spent_{io_};  // what publish() sent and the answers to it, destroyed per turn
  NatsConnectionPtr connection_;
  NatsSubscriptionPtr subscription_;
  // publish()'s answers: an asynchronous subscription of its own, since cnats hands a synchronous
  // one's 503 No Responders over without its subject, which names the publish.
  NatsSubscriptionPtr publish_subscription_;
  std::string inbox_;          // "<inbox>." : a pull's reply subject is inbox_ + id
  std::string publish_inbox_;  // "<inbox>." : a publish's reply subject is publish_inbox_ + id
  std::string pull_subject_;
  std::string info_subject_;
  std::string request_body_;  // reused: no allocation per pull request
  UpstreamListener* listener_ = nullptr;
  bool renew_due_ = false;  // cnats dropped the connection while reading: renew it once it is back
  boost::asio::steady_timer renew_timer_{io_};
  // Whether the header blocks found in received messages are trusted: checked once against
  // cnats's parse, or given up for rebuilding every block.
  enum class HeaderLayout { kUnchecked, kChecked, kRebuild };
  HeaderLayout header_layout_ = HeaderLayout::kUnchecked;
  bool told_parsed_ = false;   // the warning about blocks cnats had parsed already, given once
  bool told_unknown_ = false;  // ... about a block not where the layout says
};

}  // namespace jetfan
