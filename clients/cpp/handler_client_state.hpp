#pragma once
// The inside of HandlerClient (handler_client.hpp), shared by handler_client.cpp (connection, pull
// loop, confirmations) and handler_client_run.cpp (the worker pool). Not installed.
//
// Threads: the members under "reader" belong to the thread that holds `read_mutex`: the one in
// next(), run()'s reading thread while it reads, or a wait() that reads because no one else does.
// The members under `mutex` may be touched by any thread holding it, and every write to `fd`
// happens with it held. The reader replaces `fd` only with `mutex` held, so it may read from it
// without the lock. Lock order: read_mutex, then mutex.

#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "delivery_parser.hpp"
#include "handler_client.hpp"
#include "unique_fd.hpp"

namespace jetfan {

struct HandlerClient::State {
  State(std::string socket_path, std::string handler, ClientOptions options);

  const std::string socket_path;
  const std::string handler;
  const ClientOptions options;
  UniqueFd wake;  // an eventfd; stop() makes it readable for good
  std::atomic<bool> stopping{false};
  std::atomic<std::thread::id> reader_thread;

  std::mutex read_mutex;  // held by the thread that reads (see above)
  // Holds read_mutex for a scope (or tries to); letting go of it wakes the wait()s, one of which may
  // read next.
  class ReadTurn {
   public:
    explicit ReadTurn(State& state) : state_(state), owns_(true) { state_.read_mutex.lock(); }
    ReadTurn(State& state, std::try_to_lock_t) : state_(state), owns_(state.read_mutex.try_lock()) {}
    ~ReadTurn() {
      if (!owns_) return;
      state_.read_mutex.unlock();
      state_.note_event();
    }
    ReadTurn(const ReadTurn&) = delete;
    ReadTurn& operator=(const ReadTurn&) = delete;
    bool owns() const { return owns_; }

   private:
    State& state_;
    bool owns_;
  };

  // reader
  proto::DeliveryParser parser;
  std::vector<char> in;
  std::size_t in_begin = 0, in_end = 0;
  bool connected = false;
  // Deliveries a wait() read on the current connection, for next() to return first (already in
  // `unconfirmed`).
  std::deque<Delivery> early;
  // What a wait() met that next() is to throw (an ERR, broken framing); the connection is dropped.
  std::exception_ptr pending_error;

  // A delivery unconfirmed on the current connection.
  struct Unconfirmed {
    std::uint64_t wire = 0;        // its id on the wire
    std::uint64_t next_index = 0;  // the default index of its next tied publish
    std::string failed_tie;        // a tied publish failed: why; its ACK goes as a NAK saying so
  };
  // A PUB waiting for its answer.
  struct Publish {
    std::promise<Published> promise;
    std::optional<std::uint64_t> tied_to;  // the client id of its delivery
  };

  mutable std::mutex mutex;
  std::condition_variable unconfirmed_shrank;  // also: a publish was made (run() reads on for its answer)
  // Notified when `events` moves: a publish was answered or failed, or a reader let go of
  // read_mutex. A wait() that cannot read waits for it.
  std::condition_variable reader_event;
  std::uint64_t events = 0;
  UniqueFd fd;
  bool accepting = false;  // READY came on `fd`: publishes may go out
  proto::Ready ready;
  std::uint64_t connections = 0;
  std::unordered_map<std::uint64_t, Unconfirmed> unconfirmed;  // by client id
  std::uint64_t next_id = 1;
  std::unordered_map<std::uint64_t, Publish> publishes;  // by request id, on the current connection
  std::uint64_t next_request = 1;
  std::string out;              // confirmations and publishes not yet written
  bool reader_waiting = false;  // the reader is blocked on the socket: write confirmations at once
  bool broken = false;          // a write failed; nothing more is written on this connection

  void log(const std::string& line) const;

  // --- reader side (read_mutex held)
  enum class Read { kFrame, kClosed, kFailed, kStopped };
  // The next frame from jetfan; writes buffered confirmations before it waits, and waits until
  // `wake_fd` (-1: none) is readable at most. `error` is errno for kFailed. Throws ClientError for
  // data the protocol does not allow, having dropped the connection.
  Read read_frame(proto::Frame& frame, int& error, int wake_fd);
  // Connects until READY (first: the constructor's rules; else forever). false: stopped.
  bool connect(bool first);
  // Forgets the connection: its deliveries can no longer be confirmed, its publishes fail with
  // "connection-lost".
  void drop_connection(const std::string& why, bool announce);
  // One frame read and handled on the connected connection: PING answered, a PUB's answer given to
  // its future, a MSG made a Delivery (kDelivery, in `delivery`). kLost: the connection ended and was
  // dropped; kWoken: `wake_fd` became readable. Throws ClientError as next() does, the connection
  // dropped.
  enum class Step { kDelivery, kHandled, kLost, kWoken };
  Step step(int wake_fd, std::optional<Delivery>& delivery);
  std::optional<Delivery> next();
  // wait(): reads one frame, keeping a MSG for next() (NAK'ing it after stop()) and what it would
  // throw in pending_error.
  void read_for_wait();
  // run(): blocks while the deliveries held reach READY's max-unconfirmed and no publish waits for
  // its answer (which only reading brings).
  void wait_below_limit();
  // NAKs a delivery read but never handed out (stop() came first).
  void nak_unstarted(const Delivery& delivery);

  // --- any thread
  bool confirm(std::uint64_t id, proto::Verb verb, std::optional<std::uint64_t> delay_ms, std::string_view reason);
  std::future<Published> publish(std::optional<std::uint64_t> tied_to, std::optional<std::uint32_t> index,
                                 std::string_view subject, std::string_view payload, const Headers& headers);
  // Fails every publish waiting with `code`, taking them out of `publishes` (mutex not held).
  void fail_publishes(const std::string& code, const std::string& reason);
  // Moves `events` and wakes the wait()s (mutex not held).
  void note_event();
  void write_out_locked();

 private:
  struct Attempt {
    bool ok = false;
    bool stopped = false;
    bool permanent = false;  // retrying cannot help (e.g. permission denied)
    std::string error;
  };
  // Says HELLO asking for protocol `version` (the highest the client speaks); against a jetfan that
  // refuses it for one that speaks only version 1, connects again asking for 1.
  Attempt try_connect(std::uint32_t version);
};

}  // namespace jetfan
