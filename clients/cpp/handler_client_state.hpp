#pragma once
// The inside of HandlerClient (handler_client.hpp), shared by handler_client.cpp (connection, pull
// loop, confirmations) and handler_client_run.cpp (the worker pool). Not installed.
//
// Threads: the members under "reader" belong to the one thread in next() or run(); the members
// under `mutex` may be touched by any thread holding it, and every write to `fd` happens with it
// held. The reader replaces `fd` only with `mutex` held, so it may read from it without the lock.

#include <atomic>
#include <condition_variable>
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

  // reader
  proto::DeliveryParser parser;
  std::vector<char> in;
  std::size_t in_begin = 0, in_end = 0;
  bool connected = false;

  mutable std::mutex mutex;
  std::condition_variable unconfirmed_shrank;
  UniqueFd fd;
  proto::Ready ready;
  std::uint64_t connections = 0;
  std::unordered_map<std::uint64_t, std::uint64_t> unconfirmed;  // client id -> id on the wire
  std::uint64_t next_id = 1;
  std::string out;              // confirmations not yet written
  bool reader_waiting = false;  // the reader is blocked on the socket: write confirmations at once
  bool broken = false;          // a write failed; nothing more is written on this connection

  void log(const std::string& line) const;

  // --- reader side
  enum class Read { kFrame, kClosed, kFailed, kStopped };
  // The next frame from jetfan; writes buffered confirmations before it waits. `error` is errno
  // for kFailed. Throws ClientError for data the protocol does not allow.
  Read read_frame(proto::Frame& frame, int& error);
  // Connects until READY (first: the constructor's rules; else forever). false: stopped.
  bool connect(bool first);
  void drop_connection(const std::string& why, bool announce);
  std::optional<Delivery> next();
  // run(): blocks while the deliveries held reach READY's max-unconfirmed.
  void wait_below_limit();

  // --- any thread
  bool confirm(std::uint64_t id, proto::Verb verb, std::optional<std::uint64_t> delay_ms, std::string_view reason);
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
