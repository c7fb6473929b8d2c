#pragma once
// Upstream: the one seam between the Dispatcher and JetStream. What the dispatcher asks of the
// server (pull, probe, the replies +ACK -NAK{delay} +TERM +WPI, a publish with JetStream's
// acknowledgement) and what it hears back (arrivals already classified, status replies to its
// pulls, probe answers, publish acknowledgements, reconnects). JetStreamReader implements it over
// cnats; tests and the session fuzzer implement it with a fake (daemon/fake_upstream.hpp). Nothing
// on this side of the seam knows cnats.
//
// Thread: every call, both ways, on the io_context thread. A listener's callbacks may call the
// upstream again (reply, pull) from inside them.
// Lifetimes: the views in what a callback is given are valid for that call only, except a
// message's bytes, which the listener owns from then on (MessageBytesPtr).

#include <cstdint>
#include <string_view>

#include "message_bytes.hpp"
#include "pull_ledger.hpp"
#include "time.hpp"

namespace jetfan {

// A message of the stream, as the upstream classified it.
struct InboundMessage {
  MessageBytesPtr bytes;  // subject, reply, headers, payload; never null
  // Read from the $JS.ACK reply subject and the subject; meaningful only when `routable`.
  std::string_view key;  // the subject less key.strip_prefix; points into bytes
  std::uint64_t stream_seq = 0;
  std::uint64_t deliveries = 1;
  std::uint64_t consumer_seq = 0;  // the consumer's number for this delivery (gaps: docs/dispatch-rules.md R32)
  std::uint64_t published_ns = 0;  // when the stream stored it (the server's clock); 0: unknown
  // false: it has no key (its subject does not start with key.strip_prefix) or no ack subject that
  // could be read; stream_seq is then 0 when unknown.
  bool routable = true;
};

// A status reply to one of jetfan's pull requests: it came on the request's own reply subject.
struct PullStatus {
  std::uint64_t pull = 0;        // 0: of no known request (a 503 No Responders)
  std::string_view code;         // "100", "404", "408", "409", "503", ...
  std::string_view description;  // e.g. "Leadership Change"; may be empty
};

// The answer to a publish(): JetStream's acknowledgement, or why there is none.
struct PublishResult {
  bool stored = false;           // a stream took it
  std::uint64_t stream_seq = 0;  // where it was stored
  std::string_view stream;       // which stream took it
  std::string_view error;        // when not stored: the server's description, "no responders", ...
  bool duplicate = false;        // stored: the stream had it already, under its Nats-Msg-Id (stream_seq is that copy's)
  bool no_stream = false;        // not stored: no stream captures the subject (no responders)
};

// The answer to an api_request(): the JSON JetStream sent, or why there is none.
struct ApiReply {
  std::string_view json;   // empty when there is no answer
  std::string_view error;  // when json is empty: "no responders", a status line, ...
};

// The `why` of on_disconnected when the client dropped the connection while reading what the server
// sent (a protocol error: a MSG it cannot parse, as a subject with a CR makes).
inline constexpr std::string_view kProtocolError = "the client could not read what the server sent (a protocol error)";

class UpstreamListener {
 public:
  // The connection to the server was lost (`why`: the client's words, or kProtocolError); it is
  // being made again.
  virtual void on_disconnected(std::string_view why) = 0;
  // The connection to the server was made again: the server has forgotten every pull request.
  virtual void on_reconnected() = 0;
  virtual void on_message(InboundMessage&& message) = 0;
  virtual void on_pull_status(const PullStatus& status) = 0;
  // The answer to probe `id`: `answered` when the consumer's info came back (not an error).
  virtual void on_probe_answer(bool answered) = 0;
  virtual void on_published(std::uint64_t id, const PublishResult& result) = 0;
  virtual void on_api_reply(std::uint64_t id, const ApiReply& reply) = 0;
  // The end of what one read of the server brought (any of the above before it): act on it together.
  virtual void on_batch_end() = 0;

 protected:
  ~UpstreamListener() = default;
};

class Upstream {
 public:
  // From now on, everything that comes in goes to `listener` (nullptr: to nobody; its owner goes).
  virtual void listen(UpstreamListener* listener) = 0;
  // Sends one pull request, answered on its own reply subject. False when it could not go out.
  virtual bool send_pull(const PullRequest& request) = 0;
  // Asks for the consumer's info, answered by on_probe_answer. Never blocks.
  virtual bool send_probe(std::uint64_t id) = 0;
  // Replies to the server about a message it delivered. Never block on the network.
  virtual void ack(const MessageBytes& message) = 0;
  virtual void nak(const MessageBytes& message, Duration delay) = 0;
  virtual void term(const MessageBytes& message) = 0;
  virtual void wip(const MessageBytes& message) = 0;
  // Publishes `payload` with `headers` (a NATS/1.0 block, or empty) to `subject`, answered by
  // on_published(id, ...) with JetStream's acknowledgement. False when it could not go out (the
  // answer then never comes).
  virtual bool publish(std::uint64_t id, std::string_view subject, std::string_view headers,
                       std::string_view payload) = 0;
  // Sends a JetStream API request (`body` to `subject`, e.g. $JS.API.STREAM.MSG.GET.<stream>),
  // answered by on_api_reply(id, ...). False when it could not go out (the answer then never
  // comes). No answer at all is possible (the connection went): the caller times it out.
  virtual bool api_request(std::uint64_t id, std::string_view subject, std::string_view body) = 0;
  // Sends whatever is buffered, waiting at most `timeout`, then closes. Nothing comes in after.
  virtual void close(Duration timeout) = 0;
  // The largest message (headers and payload) the server takes, as its INFO said on the current or
  // last connection; 0 before the first.
  virtual std::size_t max_payload() const = 0;

 protected:
  ~Upstream() = default;
};

}  // namespace jetfan
