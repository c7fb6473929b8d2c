#pragma once
// JetStreamReader: jetfan's one connection to NATS, and the cnats calls made on it. What to ask
// for and what to answer is decided elsewhere (PullLedger, DispatchCore); this class only talks.
//
// It binds the consumer named in the config and never creates, updates or deletes one. It reads
// with plain pull requests to $JS.API.CONSUMER.MSG.NEXT.<stream>.<durable>, each with its own reply
// subject <inbox>.<id> under one private inbox. cnats's own Fetch is not used: in 3.4.1 it can
// ignore its timeout and overrun its batch array, and it does not re-send a pull after a reconnect.
//
// Threads and lifetimes:
//   - Every public method runs on the io_context thread (checked in debug and JETFAN_CHECKS builds).
//   - cnats's socket I/O runs on that thread too (NatsEventLoop): the io thread reads the server's
//     socket, cnats routes what it read to the inbox's synchronous subscription, and on_read() hands
//     it to the ingress handler at once: from the server's socket to a handler's on one thread.
//     Calls that wait for the server's reply (the consumer info in bind_consumer, the flush in close)
//     wait on a short-lived thread while the io thread feeds cnats (wait_off_thread).
//   - cnats still calls back on its own threads (reconnect, async callbacks). Those callbacks only
//     set a flag in Ingress, under its lock, and post one drain into the io_context.
//   - cnats may run a callback after Close has returned. The pointer to Ingress cnats holds is
//     therefore backed by a reference that keeps it alive until the connection's closed callback.
//   - After close() begins, disconnect and reconnect callbacks are ignored. close() destroys the
//     subscription only after the connection is closed (see close()).
// Ownership: the reader owns the connection. Every message it hands out is the receiver's
// (NatsMsgPtr); replies need only the message's reply subject, so they may outlive nothing.

#include <boost/asio/io_context.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config.hpp"
#include "consumer_facts.hpp"
#include "io_thread.hpp"
#include "nats_event_loop.hpp"
#include "nats_handles.hpp"
#include "pull_ledger.hpp"

namespace jetfan {

// A status reply to one of jetfan's pull requests: it came on <inbox>.<pull>.
struct PullStatus {
  std::uint64_t pull = 0;
  std::string_view code;         // "100", "404", "408", "409", ...
  std::string_view description;  // e.g. "Leadership Change"; may be empty
};

// What came in on jetfan's inbox or as a message of the stream.
struct Incoming {
  enum class Kind {
    kMessage,      // a message of the stream, with its $JS.ACK reply subject
    kPullStatus,   // a status reply to a pull request
    kProbeAnswer,  // the answer to a consumer-info probe (<inbox>.p<id>)
  };
  Kind kind = Kind::kMessage;
  PullStatus status;      // kPullStatus
  bool answered = false;  // kProbeAnswer: the consumer's info came back (not an error)
};

class JetStreamReader {
 public:
  // Everything cnats delivered since the last call, in the order it arrived: messages and status
  // replies. `reconnected`: the connection was re-established before (some of) them.
  using IngressHandler = std::function<void(std::vector<NatsMsgPtr>& incoming, bool reconnected)>;

  JetStreamReader(boost::asio::io_context& io, const Config& config);
  ~JetStreamReader();
  JetStreamReader(const JetStreamReader&) = delete;
  JetStreamReader& operator=(const JetStreamReader&) = delete;

  // Connects, retrying with capped backoff while no server answers and logging each attempt.
  // Runs `io` between attempts so signals are handled. Returns false if `stopping` turned true.
  // Throws StartupError for failures that waiting cannot fix (credentials refused, TLS).
  bool connect(const std::function<bool()>& stopping);

  // Reads the consumer's info. Throws StartupError (kExitConfig) when the stream or the consumer
  // does not exist, or when it is a push consumer. Facts stay empty when info cannot be read.
  ConsumerFacts bind_consumer();

  // Subscribes the private inbox; from then on `handler` is called on the io thread.
  void subscribe(IngressHandler handler);
  // No more calls to the handler (its owner is going away).
  void stop_delivering();

  // What `message` is. Views in it are valid while `message` is.
  Incoming classify(natsMsg* message) const;

  // Sends one pull request. False (and logged) when cnats refused it.
  bool send_pull(const PullRequest& request);
  // Asks for the consumer's info, the answer to come on <inbox>.p<id>. Never blocks.
  bool send_probe(std::uint64_t id);

  // Asks the server for the consumer's info ($JS.API.CONSUMER.INFO), without waiting: the answer
  // comes to `handler` on the io thread, with the `id` given here, and never to the ingress handler.
  // False when there is no connection to ask on. The handler is set once (nullptr: no more calls).
  using InfoHandler = std::function<void(std::uint64_t id, std::string_view json)>;
  void on_consumer_info(InfoHandler handler);
  bool request_consumer_info(std::uint64_t id);

  // Replies to the server about a message. Never block on the network.
  void ack(natsMsg* message);
  void nak(natsMsg* message, Duration delay);
  void term(natsMsg* message);
  void wip(natsMsg* message);

  // Sends whatever is buffered, waiting at most `timeout`, then closes the connection.
  void close(Duration timeout);

  struct Ingress;  // what cnats threads hand over; defined in the .cpp

 private:
  NatsOptionsPtr make_options();
  void on_ingress();
  void on_read();  // takes what a read routed to the inbox, on the io thread
  NatsMsgPtr no_responders_status() const;
  // Runs `call` (which waits for the server) on a short-lived thread while this one feeds cnats.
  void wait_off_thread(const std::function<void()>& call, Duration timeout);
  void take_info_replies();
  void reply(natsMsg* message, const char* body, std::size_t length);

  boost::asio::io_context& io_;
  const Config& config_;
  IoThread thread_;
  std::shared_ptr<Ingress> ingress_;
  // cnats's socket I/O on `io` (its external event-loop API); the inbox is a synchronous
  // subscription drained after each read. Before connection_: it outlives the connection.
  NatsEventLoop loop_;
  NatsConnectionPtr connection_;
  NatsSubscriptionPtr subscription_;
  std::string inbox_;  // "<inbox>." : a pull's reply subject is inbox_ + id
  std::string pull_subject_;
  std::string info_subject_;
  std::string request_body_;  // reused: no allocation per pull request
  IngressHandler handler_;
  std::vector<NatsMsgPtr> incoming_;  // reused from batch to batch
  InfoHandler info_handler_;
  std::size_t info_outstanding_ = 0;  // consumer info requests not yet answered
};

}  // namespace jetfan
