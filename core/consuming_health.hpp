#pragma once
// ConsumingHealth: whether jetfan consumes its durable as its only reader, and if not, why, one
// line each. What `/ready`, `jetfan status` (exit 1) and the container's health check go by;
// `/live` stays the process's own liveness. Pure: the dispatcher tells it what happened, with the
// time, and asks.
//
// Not consuming means any of:
//   - the NATS connection is lost, for longer than `disconnected_grace` (a reconnect within it,
//     as after a server restart, is not worth a page);
//   - the consumer or its stream is gone (the server said so to a consumer info request);
//   - another client reads the durable (OtherReaderCheck).
//
// Thread: one owner.

#include <optional>
#include <string>
#include <vector>

#include "time.hpp"

namespace jetfan {

class ConsumingHealth {
 public:
  explicit ConsumingHealth(Duration disconnected_grace) : grace_(disconnected_grace) {}

  void disconnected(TimePoint now, std::string why);
  void reconnected();
  // What the server last said of the consumer: nullopt when it was there; else why it is not
  // ("the server says: stream not found (404)").
  void consumer_missing(std::optional<std::string> why) { missing_ = std::move(why); }
  // The description of another reader while one is seen; nullopt once it is gone.
  void other_reader(std::optional<std::string> what) { other_ = std::move(what); }

  bool connected() const { return !disconnected_since_; }
  // How long the connection has been lost; nullopt while connected.
  std::optional<Duration> disconnected_for(TimePoint now) const;
  // Why the connection went last, in the client's words; empty when it never went.
  const std::string& last_disconnect() const { return last_why_; }
  bool other_reader_seen() const { return other_.has_value(); }

  // Why jetfan is not consuming now, one line each for status; empty: it is.
  std::vector<std::string> reasons(TimePoint now) const;

 private:
  Duration grace_;
  std::optional<TimePoint> disconnected_since_;
  std::string last_why_;
  std::optional<std::string> missing_;
  std::optional<std::string> other_;
};

}  // namespace jetfan
