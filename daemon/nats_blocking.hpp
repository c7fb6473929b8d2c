#pragma once
// NatsBlocking: what a caller that waits for the server's answer needs of jetfan's one NATS
// connection. The io thread feeds cnats (NatsEventLoop), so a call that waits for a reply must run
// on another thread while the io thread goes on reading: wait_off_thread does that.
//
// For startup and the admin requests only (JetStreamAdmin, StreamReader), never on the message
// path. Thread: the io_context thread. The connection is borrowed: it stays the implementer's.

#include <functional>

#include <nats/nats.h>

#include "time.hpp"

namespace jetfan {

class NatsBlocking {
 public:
  // The connection, or nullptr before connect() and after close().
  virtual natsConnection* connection() const = 0;
  // Runs `call`, which may wait for the server, on a short-lived thread while this one feeds cnats,
  // and returns when it has returned. `timeout` (0: none) bounds the feeding, as a safety net: the
  // call's own cnats timeout is what ends it.
  virtual void wait_off_thread(const std::function<void()>& call, Duration timeout) = 0;

 protected:
  ~NatsBlocking() = default;
};

// cnats's last error on this thread, in words.
std::string nats_last_error(natsStatus status);

}  // namespace jetfan
