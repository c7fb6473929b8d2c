#pragma once
// JetStreamReader: jetfan's one reader of the module's durable pull consumer.
//
// It binds the consumer named in the config and never creates, updates or deletes one. It reads
// with plain NATS pull requests to $JS.API.CONSUMER.MSG.NEXT.<stream>.<durable>, each with its own
// reply subject under one private inbox, so the credit each request has left is known exactly, and
// status replies (100 heartbeat, 404/408 done, 409) retire the right request. cnats's own Fetch is
// avoided: in 3.4.1 it can ignore its timeout and overrun its batch array, and it does not re-send a
// pull after a reconnect. Here a reconnect, or a server that stays silent past the heartbeat, drops
// every outstanding request and pulls anew at once.
//
// Threads: every public method runs on the io_context thread. cnats calls back on its own threads;
// those callbacks only append to a locked queue and post one drain into the io_context.
// Ownership: the reader owns the connection and every message until it is handed out as NatsMsgPtr.

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config.hpp"
#include "dispatch_core.hpp"
#include "nats_handles.hpp"

namespace jetfan {

// What the server says about the consumer, or what the config says in its place.
struct ConsumerFacts {
  AckPolicy ack_policy = AckPolicy::kExplicit;
  Duration ack_wait{30000};
  std::int64_t max_deliver = -1;
  std::int64_t max_ack_pending = -1;
  std::string filter;
  bool from_server = false;  // false: consumer info could not be read, config values are used
};

class JetStreamReader {
 public:
  // Messages arrive in batches, in the order the server sent them.
  using MessagesHandler = std::function<void(std::vector<NatsMsgPtr>& messages)>;

  JetStreamReader(boost::asio::io_context& io, const Config& config);
  ~JetStreamReader();
  JetStreamReader(const JetStreamReader&) = delete;
  JetStreamReader& operator=(const JetStreamReader&) = delete;

  // Connects, retrying with capped backoff while no server answers and logging each attempt.
  // Runs `io` between attempts so signals are handled. Returns false if `stopping` turned true.
  // Throws StartupError for failures that waiting cannot fix (credentials refused, TLS).
  bool connect(const std::function<bool()>& stopping);

  // Reads the consumer's info. Throws StartupError (kExitConfig) when the stream or the consumer
  // does not exist, or when it is a push consumer.
  ConsumerFacts bind_consumer();

  // Subscribes the inbox and starts pulling. `max_held` bounds held + requested messages.
  void start(MessagesHandler on_messages, std::size_t max_held);

  // Issues pull requests so that `held` plus what is requested stays within max_held, keeping the
  // next request in flight before the current one is used up.
  void top_up(std::size_t held);
  // Retires requests the server can no longer answer (expired, or silent past the heartbeat).
  void check_liveness();
  // Sends no more pull requests. Those already at the server stay until filled or expired.
  void stop_pulling();
  // The shortest delay with which a message can be handed back (nak'd) without the server
  // delivering it straight back into one of our pull requests: 0 when none is outstanding.
  Duration handback_delay() const;

  // Replies to the server about a message. Never blocks on the network.
  void ack(natsMsg* message);
  void nak(natsMsg* message, Duration delay);
  void term(natsMsg* message);
  void wip(natsMsg* message);

  // Sends whatever is buffered, waiting at most `timeout`, then closes the connection.
  void close(Duration timeout);

  struct Ingress;  // what cnats threads hand over; defined in the .cpp

 private:
  struct Pull {
    std::size_t remaining;
    std::chrono::steady_clock::time_point expires;
  };

  NatsOptionsPtr make_options();
  void on_ingress();
  void handle_status(natsMsg* message, std::uint64_t pull, const char* status);
  void used_one_credit();
  void drop_all_pulls(const char* why);
  void reply(natsMsg* message, const char* body, std::size_t length);

  boost::asio::io_context& io_;
  const Config& config_;
  std::shared_ptr<Ingress> ingress_;
  NatsConnectionPtr connection_;
  NatsSubscriptionPtr subscription_;
  std::string inbox_;
  std::string pull_subject_;
  MessagesHandler on_messages_;
  std::vector<NatsMsgPtr> incoming_, batch_;
  std::size_t max_held_ = 0;
  std::map<std::uint64_t, Pull> pulls_;
  std::size_t requested_ = 0;
  std::uint64_t next_pull_ = 1;
  bool pulling_ = false;
  std::chrono::steady_clock::time_point last_heard_;
};

}  // namespace jetfan
