#pragma once
// HandlerPublisher: the publishes handlers make through jetfan (protocol version 3's PUB,
// proto/PROTOCOL.md "Publishing"). It judges each PUB against the handler's `publish` settings,
// sends what may go through the Upstream with JetStream's acknowledgement, and turns the server's
// answer, or none within publish.timeout, into the PUBOK or PUBERR the session is to send. It keeps,
// per connection, what waits for the server, so that a connection with as much as its
// publish.max_in_flight or max_bytes allow is read no more (full()) until answers come.
//
// A publish tied to a delivery (PUB ... <delivery-id> <index>) carries a Nats-Msg-Id made from the
// message it was made for (tied_msg_id), replacing any the handler set, so that JetStream drops the
// copy a redelivery publishes again. While a delivery has tied publishes waiting, its ACK is held
// (hold_ack): the Dispatcher gets it back as released() once they are all answered, as an ACK when
// every one was stored and as a failure otherwise.
//
// The answers it makes are values; the Dispatcher sends them. It never calls back.
//
// Thread: the io_context thread only. `upstream` must outlive it.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config.hpp"
#include "dispatch_core.hpp"
#include "protocol.hpp"
#include "publish_stats.hpp"
#include "upstream.hpp"

namespace jetfan {

// What a session is to send for one PUB.
struct PublishReply {
  ConnectionId connection = 0;
  std::uint64_t request = 0;  // the PUB's request id
  bool stored = false;        // PUBOK; else PUBERR with `code` and `reason`
  std::string stream;
  std::uint64_t seq = 0;
  bool duplicate = false;
  proto::PublishError code = proto::PublishError::kRefused;
  std::string reason;
};

// A held ACK whose tied publishes have all been answered: `failed` says why one was not stored
// (empty: all were, and the ACK counts).
struct ReleasedAck {
  ConnectionId connection = 0;
  DeliveryId delivery = 0;
  std::string failed;
};

// Nats-Msg-Id of a publish tied to a delivery: the message's stream, jetfan's durable consumer, its
// stream sequence, the handler, the handler's index of the publish.
std::string tied_msg_id(std::string_view stream, std::string_view durable, std::uint64_t stream_seq,
                        std::string_view handler, std::uint64_t index);
// `headers` (a NATS/1.0 block, or empty) with its Nats-Msg-Id fields replaced by one of `msg_id`.
std::string with_msg_id(std::string_view headers, std::string_view msg_id);

class HandlerPublisher {
 public:
  // Ids it gives the Upstream have this bit, and neither of the two above it (UnreadableMessages',
  // ConsumerWatch's): Dispatcher::on_published tells its answers by owns().
  static constexpr std::uint64_t kIdBit = std::uint64_t{1} << 60;
  static bool owns(std::uint64_t id) { return (id >> 60) == 1; }

  explicit HandlerPublisher(Upstream& upstream) : upstream_(upstream) {}

  // A PUB from `connection`, an instance of handler `handler_name` whose settings are `settings`
  // (none: it may not publish). For a tied PUB, `tied_seq` is the stream sequence of the delivery it
  // names (nullopt: that delivery is not in flight on the connection) and `msg_id` its Nats-Msg-Id.
  // The reply when it is known at once (refused, or it could not go out); nullopt when it went to the
  // server and the reply comes from on_published or time_out. A tied PUB refused at once (its
  // delivery in flight) makes that delivery's ACK a failure, as one the server refused does.
  std::optional<PublishReply> publish(ConnectionId connection, std::string_view handler_name,
                                      const std::optional<PublishSettings>& settings, const proto::Command& pub,
                                      std::optional<std::uint64_t> tied_seq, std::string_view msg_id, TimePoint now);
  // The server's answer to one of its publishes (owns(id)), at `now`; nullopt when the connection is gone.
  std::optional<PublishReply> on_published(std::uint64_t id, const PublishResult& result, TimePoint now);
  // The publishes unanswered past their deadline, failed as timeout.
  std::vector<PublishReply> time_out(TimePoint now);
  std::optional<TimePoint> next_deadline() const;

  // An ACK of `delivery`: true when it has tied publishes waiting, so that the ACK is held until
  // they are answered (released()); false when it may count at once.
  bool hold_ack(ConnectionId connection, DeliveryId delivery);
  // The held ACKs whose tied publishes are all answered since the last call.
  std::vector<ReleasedAck> released();
  // The delivery was NAK'd or TERM'd, or failed (its ack_timeout passed): an ACK will not count, so
  // no failure is kept for it, now or once its tied publishes still waiting are answered.
  void settled_otherwise(ConnectionId connection, DeliveryId delivery);

  // The connection closed: what it has waiting is forgotten (the answers go nowhere, a held ACK with
  // it: its delivery failed by the disconnect).
  void forget(ConnectionId connection);
  // Whether `connection` has as much waiting as `settings` allow: reading it is to stop.
  bool full(ConnectionId connection, const PublishSettings& settings) const;
  // Publishes of `connection` waiting for the server.
  std::size_t waiting(ConnectionId connection) const;
  std::size_t waiting() const { return pending_.size(); }
  // Deliveries with tied publishes it still keeps something for (waiting, a held ACK, a failure).
  std::size_t ties() const { return ties_.size(); }
  // Each handler's publishes since start, by name (a handler that never sent a PUB has none).
  const std::map<std::string, PublishStats, std::less<>>& stats() const { return stats_; }

 private:
  struct Pending {
    ConnectionId connection = 0;
    std::uint64_t request = 0;
    std::size_t bytes = 0;
    TimePoint sent{};
    TimePoint deadline{};
    PublishStats* stats = nullptr;  // its handler's, in stats_ (a map: the node stays put)
    std::optional<DeliveryId> tied_to;
  };
  struct Waiting {
    std::size_t publishes = 0;
    std::size_t bytes = 0;
    std::map<std::uint64_t, std::uint64_t> requests;  // request id -> upstream id
  };
  struct Tie {
    std::size_t waiting = 0;  // tied publishes not yet answered
    bool ack_held = false;
    bool settled = false;  // the delivery ended otherwise: nothing to keep once all are answered
    std::string failed;    // why the first failed one was not stored
  };

  // A PUBERR known at once: counted refused, or failed for server-down (it was allowed).
  // publish() but for a refused tied publish's failure.
  std::optional<PublishReply> judge_and_send(ConnectionId connection, std::string_view handler_name,
                                             const std::optional<PublishSettings>& settings, const proto::Command& pub,
                                             std::optional<std::uint64_t> tied_seq, std::string_view msg_id,
                                             TimePoint now);
  PublishReply refuse(PublishStats& stats, ConnectionId connection, std::uint64_t request, proto::PublishError code,
                      std::string reason);
  // Takes `id` out of what waits and settles its tie; the reply to send.
  PublishReply settle(std::map<std::uint64_t, Pending>::iterator found, bool stored, PublishReply reply);

  Upstream& upstream_;
  std::uint64_t next_id_ = 1;
  std::map<std::uint64_t, Pending> pending_;  // upstream id (with kIdBit) -> publish
  std::map<ConnectionId, Waiting> waiting_;
  std::map<std::pair<ConnectionId, DeliveryId>, Tie> ties_;
  std::vector<ReleasedAck> released_;
  std::map<std::string, PublishStats, std::less<>> stats_;
};

}  // namespace jetfan
