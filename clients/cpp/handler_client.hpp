#pragma once
// The C++ client for jetfan handlers (proto/PROTOCOL.md): connect to jetfan's socket as one
// declared handler, receive deliveries, confirm each one. Two ways to use it:
//
//   // A pull loop on one thread.
//   jetfan::HandlerClient client("/run/jetfan/builder.sock", "builder");
//   while (auto msg = client.next()) {
//     build(msg->payload);
//     client.ack(*msg);  // or nak(*msg, delay_ms, reason), term(*msg, reason), wip(*msg)
//   }
//
//   // A callback run on a pool of worker threads. Returning an Outcome confirms the delivery;
//   // throwing jetfan::Term terminates it (poison, with what() as the reason), jetfan::Nak NAKs it
//   // with its delay; throwing anything else NAKs it and logs what was thrown.
//   client.run([](const jetfan::Delivery& msg) { build(msg.payload); return jetfan::Outcome::ack(); },
//              {.workers = 8});
//
// Contracts:
// - Connection. The constructor connects and says HELLO, retrying while the socket is absent or
//   refuses connections for up to ClientOptions::connect_timeout, and throws ClientError if it
//   cannot. Afterwards, when the connection ends (jetfan stopped or restarted, or closed it
//   cleanly), the client reconnects by itself with a doubling backoff capped at
//   ClientOptions::backoff_max, for as long as it takes, unless ClientOptions::reconnect is false
//   (then next() returns nullopt, or throws ClientError if the connection broke). ERR from jetfan
//   (for example a handler name jetfan does not declare) is never retried: it throws ClientError
//   with jetfan's reason (calling next() again afterwards connects anew).
// - Deliveries unconfirmed when a connection ends are failed deliveries: jetfan counts them
//   failed and redelivers them. Confirming one afterwards does nothing and returns false; it is
//   never sent on the new connection, where its wire id may name another delivery. Delivery::id is this
//   client's own name for a delivery and is never reused, so a late confirmation cannot hit a
//   newer delivery.
// - Backpressure. jetfan sends at most READY's max-unconfirmed deliveries at a time (the handler's
//   max_inflight in jetfan's config); run() holds (queued plus in its workers) no more than that,
//   and stops reading while it holds that many, unless a publish waits for its answer.
// - Ordered handlers (order_by in jetfan's config) need nothing more: jetfan never sends two
//   deliveries of one order key at once, so run()'s workers are always busy with different keys.
// - Protocol version. The client asks for ClientOptions::protocol_version (3 by default) and
//   speaks what READY answers: jetfan 0.1.0 answers 2; a jetfan that speaks only version 1 refuses,
//   and the client connects again at once asking for 1. Each (re)connection negotiates anew. From
//   version 2 on, Delivery::published, Delivery::subject and Delivery::server_deliveries are set;
//   from version 3 on, Delivery::traceparent when jetfan traces the delivery, and a NAK's reason is
//   sent.
// - PING from jetfan is answered with PONG whenever the client reads.
// - Confirmations made on the thread that calls next() are buffered and written together just
//   before next() waits for input (or by flush()); confirmations made on any other thread, and
//   every WIP, are written at once.
// - Publishing (protocol version 3; PROTOCOL.md "Publishing"): publish() sends a message through
//   jetfan's own connection to NATS, to a subject the handler's publish.subjects in jetfan's config
//   allow, and returns a std::future that holds where JetStream stored it (Published) or a
//   PublishError saying why it was not, or may not have been. The tied form, publish(delivery, ...),
//   ties the publish to a delivery: jetfan gives it a Nats-Msg-Id of its making (a redelivery that
//   publishes again with the same index is dropped by the stream as a duplicate) and holds the
//   delivery's ACK until every publish tied to it is stored, a failed one turning the ACK into a
//   NAK (an ack() after the client has read the PUBERR sends that NAK itself, saying why). So a
//   handler may publish tied and ack at once, without waiting:
//
//     client.publish(*msg, "builds.started", body);  // index 0: its first publish for *msg
//     client.ack(*msg);                              // counts once the publish is stored
//
//   The answers come on the connection, and are read by whoever reads it: the thread in next() or
//   run(), or a wait(). In run(), the reading thread reads for as long as a callback runs, stop()
//   or not, so a callback may block on its future (future.get()). In a pull loop, nothing reads
//   between two calls of next(): the thread that calls next() waits for an answer with
//   client.wait(future), which reads the connection itself while no one else does (answering
//   PING, keeping the MSGs it meets for the next next()); future.get() there would wait forever.
//   wait() is right on any thread, and the one way to wait that is right everywhere.
//   A publish that cannot go out fails at once, and is never sent: "unsupported" on a connection
//   that speaks version 1 or 2, "not-connected" while the client has no connection, and what
//   jetfan would answer for a subject, header or body it refuses from the bytes alone, or for a tied
//   publish whose delivery is not unconfirmed on the current connection ("not-in-flight"). A tied
//   publish that fails before it is sent makes the delivery's ack() send a NAK instead (with why),
//   as jetfan would for one it could not store. A connection that ends with publishes unanswered
//   fails each with "connection-lost": they may have been stored. Nothing is resent by itself.
//   Bounds: jetfan's (publish.max_in_flight, max_bytes). Past them jetfan reads the connection no
//   more until the server answers, and a publish() (or confirmation) then blocks in its write, as
//   does the reader when it handles what it read; the server's answers (or publish.timeout) end
//   that, whether or not anyone reads them, so it cannot deadlock. stop() ends such a write; nothing
//   more is written on that connection then.
//
// Threads: next() and run() are for one thread at a time, and not both at once. ack(), nak(),
// term(), wip(), publish(), wait(), flush(), ready() and stop() may be called from any thread;
// stop() also from a signal handler. The client must outlive every call into it; a future still
// unanswered when the client is destroyed holds "connection-lost".

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol.hpp"

namespace jetfan {

class ClientError : public std::runtime_error {
 public:
  enum class Kind {
    kConnect,   // the socket could not be reached within connect_timeout
    kRefused,   // jetfan sent ERR; reason() is its text
    kProtocol,  // jetfan sent something the protocol does not allow
    kIo,        // reading the socket failed (with reconnect off)
  };
  ClientError(Kind kind, const std::string& message, std::string reason = {},
              proto::ErrorCode code = proto::ErrorCode::kNone)
      : std::runtime_error(message), kind_(kind), reason_(std::move(reason)), code_(code) {}
  Kind kind() const { return kind_; }
  const std::string& reason() const { return reason_; }
  // kProtocol: how the stream broke the framing (PROTOCOL.md, "Error codes").
  proto::ErrorCode code() const { return code_; }

 private:
  Kind kind_;
  std::string reason_;
  proto::ErrorCode code_;
};

// NATS headers as (name, value), in order; a name may come more than once.
using Headers = std::vector<std::pair<std::string, std::string>>;

// One delivery of a message to this handler.
struct Delivery {
  std::uint64_t id = 0;          // this client's name for the delivery; never reused
  std::string key;               // the subject less jetfan's prefix
  std::uint64_t stream_seq = 0;  // JetStream stream sequence: the same on a redelivery
  // How often jetfan has given this message to this handler, this time included: 1 the first time,
  // above 1 whenever it may have reached the handler before (retries inside jetfan included; after
  // a restart of jetfan, the server's count: proto/PROTOCOL.md).
  std::uint64_t deliveries = 0;
  std::string headers;  // the NATS header block as JetStream sent it ("NATS/1.0\r\n..."), or empty
  std::string payload;
  // Protocol version 2 (ready().version >= 2) only; nullopt, empty and 0 in version 1:
  std::optional<std::chrono::system_clock::time_point> published;  // when JetStream stored it
  std::string subject;                                             // the full NATS subject
  std::uint64_t server_deliveries = 0;  // how often JetStream has delivered it to jetfan (1 the first time)
  // Protocol version 3 (ready().version >= 3) only: the W3C traceparent of jetfan's span of this
  // delivery ("00-<trace-id>-<span-id>-<flags>"), to make the handler's own spans its children (as
  // the "traceparent" field of an OpenTelemetry propagator's carrier). nullopt when jetfan does not
  // trace this delivery, and in versions 1 and 2. A "traceparent" header in `headers` is the
  // publisher's, an ancestor of this one.
  std::optional<std::string> traceparent;

  // Every header as (name, value), in order; a repeated name once per value.
  Headers header_list() const;
  // The first value of header `name` (names match case-insensitively).
  std::optional<std::string> header(std::string_view name) const;
};

// What run()'s callback decides for a delivery.
struct Outcome {
  enum class Kind { kAck, kNak, kTerm };
  Kind kind = Kind::kAck;
  std::optional<std::uint64_t> delay_ms;  // kNak: redeliver after this long (else jetfan's backoff)
  // kTerm, and kNak on a protocol version 3 connection: why; logged by jetfan, and in the dead
  // letter when it is the handler's last word on the message. Left out of a NAK in versions 1 and 2.
  std::string reason;

  static Outcome ack() { return {}; }
  static Outcome nak(std::optional<std::uint64_t> delay_ms = std::nullopt, std::string reason = {}) {
    return {Kind::kNak, delay_ms, std::move(reason)};
  }
  static Outcome term(std::string reason = {}) { return {Kind::kTerm, std::nullopt, std::move(reason)}; }
};

// Thrown by run()'s callback: the message is poison for this handler (TERM with what() as reason).
class Term : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Thrown by run()'s callback: NAK the message with a redelivery delay of your choice (nullopt:
// jetfan's own growing delay) and `why` as its reason (version 3; none when empty), without the
// log line any other exception gets. Any other std::exception NAKs with its what() as the reason.
class Nak : public std::runtime_error {
 public:
  explicit Nak(std::optional<std::uint64_t> delay_ms = std::nullopt, const std::string& why = {})
      : std::runtime_error(why), delay_ms_(delay_ms) {}
  std::optional<std::uint64_t> delay_ms() const { return delay_ms_; }

 private:
  std::optional<std::uint64_t> delay_ms_;
};

// Where JetStream stored a publish (jetfan's PUBOK).
struct Published {
  std::string stream;     // the stream that captured the subject
  std::uint64_t seq = 0;  // its sequence there
  // The stream held it already under its Nats-Msg-Id (within its duplicate window): a tied publish
  // made again by a redelivery, or a Nats-Msg-Id of the handler's. `seq` is that earlier copy's.
  bool duplicate = false;
};

// Why a publish was not stored, or may not have been: what a publish()'s future holds instead of a
// Published. code() is jetfan's PUBERR code as sent (PROTOCOL.md "Publishing": not-allowed,
// bad-subject, bad-headers, too-large, not-in-flight, busy-id, no-stream, refused, timeout,
// server-down; one a later jetfan adds is kept as it comes), or one of the client's own:
//   "connection-lost"  the connection ended before the answer came: it may have been stored
//   "not-connected"    the client had no connection (it was reconnecting): not sent
//   "unsupported"      the connection speaks protocol version 1 or 2, which cannot publish: not sent
// The client also fails with jetfan's code, without sending, what jetfan would refuse from the bytes
// alone: a subject that is not one to publish to, or too long for the line (bad-subject), a header
// name or value that cannot be written (bad-headers), a body over the protocol's 64 MiB
// (too-large), a tied publish whose delivery is not unconfirmed on this connection (not-in-flight).
// Programs compare codes; what() and reason() are for people.
class PublishError : public std::runtime_error {
 public:
  PublishError(std::string code, std::string reason)
      : std::runtime_error("publish failed: " + code + (reason.empty() ? "" : ": " + reason)),
        code_(std::move(code)),
        reason_(std::move(reason)) {}
  const std::string& code() const { return code_; }
  const std::string& reason() const { return reason_; }
  // It may have been stored all the same ("timeout", "connection-lost"): publishing it again may
  // make a second copy, unless it carries a Nats-Msg-Id (a tied publish does).
  bool maybe_stored() const { return code_ == "timeout" || code_ == "connection-lost"; }

 private:
  std::string code_;
  std::string reason_;
};

struct ClientOptions {
  bool reconnect = true;
  // The highest protocol version to ask for (PROTOCOL.md, "Version negotiation"). With the
  // default, a jetfan that speaks only version 1 is spoken to in version 1; 1 asks for version 1.
  std::uint32_t protocol_version = proto::kLatestVersion;
  std::chrono::milliseconds connect_timeout{10000};  // the first connection, in the constructor
  std::chrono::milliseconds backoff_initial{50};     // first wait between reconnect attempts
  std::chrono::milliseconds backoff_max{2000};       // the wait doubles up to this
  // Where the client reports what a handler's operator should know: a lost connection and its
  // return, a callback that threw. Called from the reading thread or a worker, one line at a time.
  // Default: a line on stderr.
  std::function<void(std::string_view)> log;
};

struct RunOptions {
  unsigned workers = 1;  // threads calling the callback; at most max-unconfirmed are ever busy
};

class HandlerClient {
 public:
  using Callback = std::function<Outcome(const Delivery&)>;

  HandlerClient(std::string socket_path, std::string handler, ClientOptions options = {});
  ~HandlerClient();
  HandlerClient(const HandlerClient&) = delete;
  HandlerClient& operator=(const HandlerClient&) = delete;

  // What jetfan said in READY on the current connection (it may change after a reconnect).
  proto::Ready ready() const;

  // The next delivery; answers PING and reconnects as needed. nullopt once stop() was called, or
  // when the connection ended and reconnect is off.
  std::optional<Delivery> next();

  // Calls `callback` for each delivery on `options.workers` threads (the calling thread reads)
  // until stop() is called, then lets the callbacks in progress finish, NAKs the deliveries not
  // yet started (so jetfan can give them to another instance at once), and returns. Throws
  // ClientError as next() does, after the callbacks in progress have finished. Deliveries a
  // lost connection left in the queue are dropped, not called: they can no longer be confirmed.
  void run(const Callback& callback, RunOptions options = {});

  // Confirm a delivery. true: sent (or buffered to be sent); false: not unconfirmed on the current
  // connection (already confirmed, or its connection has ended: jetfan redelivers it).
  bool ack(const Delivery& delivery) { return ack(delivery.id); }
  // A NAK's `reason` is sent on a protocol version 3 connection (ready().version >= 3) and left out
  // before: jetfan puts it in the dead letter if this NAK uses up the handler's retries.
  bool nak(const Delivery& delivery, std::optional<std::uint64_t> delay_ms = std::nullopt,
           std::string_view reason = {}) {
    return nak(delivery.id, delay_ms, reason);
  }
  bool term(const Delivery& delivery, std::string_view reason = {}) { return term(delivery.id, reason); }
  bool wip(const Delivery& delivery) { return wip(delivery.id); }  // restarts its ack_timeout
  bool ack(std::uint64_t id);
  bool nak(std::uint64_t id, std::optional<std::uint64_t> delay_ms = std::nullopt, std::string_view reason = {});
  bool term(std::uint64_t id, std::string_view reason = {});
  bool wip(std::uint64_t id);

  // Publishes `payload` to `subject` with `headers` (none: no header block) through jetfan (see
  // "Publishing" above). The future holds a Published once JetStream has stored it, else a
  // PublishError; publish() itself throws nothing but std::bad_alloc. Made on the thread that calls
  // next(), the PUB is buffered as a confirmation is, and written before next() or wait() waits.
  std::future<Published> publish(std::string_view subject, std::string_view payload, const Headers& headers = {});
  // The same, tied to `delivery` as its `index`-th publish (PROTOCOL.md "Publishing"): by default one
  // more than the highest index of a publish sent tied to it so far, 0 for the first, so 0, 1, 2, ...
  // in the order they are made. Give each publish of a delivery its own index, the same one each time
  // the message is handled: that is what makes a redelivery's publish a duplicate JetStream drops.
  // Make them before the delivery's ack(), which jetfan then holds until they are stored.
  std::future<Published> publish(const Delivery& delivery, std::string_view subject, std::string_view payload,
                                 const Headers& headers = {}, std::optional<std::uint32_t> index = std::nullopt);

  // The result of a publish(): its Published, or throws its PublishError. Whenever no other thread
  // is reading the connection (in next(), run() or a wait()), it reads it itself until the answer
  // comes: the way for the thread that calls next() to wait for a publish. stop() does
  // not cut it short: jetfan answers every PUB within the handler's publish.timeout, or the
  // connection ends ("connection-lost"). What it reads besides is kept: MSGs for the next next()
  // (NAK'd at once after stop()), an ERR or broken framing for next() or run() to throw.
  Published wait(std::future<Published> published);

  // Writes the confirmations (and publishes) buffered so far.
  void flush();

  // Ends next() and run() (see there) and any wait for a reconnect. Final; async-signal-safe.
  void stop() noexcept;

  // How many times the client has connected (1 after the constructor); for logs and tests.
  std::uint64_t connections() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace jetfan
