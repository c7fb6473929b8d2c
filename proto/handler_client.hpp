#pragma once
// The C++ client for jetfan handlers: connect to jetfan's socket as one declared handler, receive
// deliveries, confirm them.
//
//   jetfan::HandlerClient client("/run/jetfan/builder.sock", "builder");
//   while (auto msg = client.next()) {
//     handle(msg->key, msg->payload);
//     client.ack(msg->id);
//   }
//
// Blocking and single-threaded: use one client from one thread. Confirmations are buffered and
// written together just before next() waits for input, or by flush(). Errors that end the
// connection (jetfan unreachable, ERR from jetfan, a broken stream) throw ClientError; jetfan
// closing the connection cleanly makes next() return nullopt. Reconnecting is safe: whatever was
// unconfirmed is redelivered.

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "delivery_parser.hpp"
#include "protocol.hpp"
#include "unique_fd.hpp"

namespace jetfan {

class ClientError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class HandlerClient {
 public:
  // Connects and says HELLO, then waits for READY. While the socket does not exist yet or refuses
  // connections, retries for up to `wait_for_socket` (jetfan may be starting).
  HandlerClient(const std::string& socket_path, const std::string& handler,
                std::chrono::milliseconds wait_for_socket = std::chrono::seconds(10));

  const proto::Ready& ready() const { return ready_; }

  // The next delivery; answers PING by itself. nullopt: jetfan closed the connection.
  std::optional<proto::Delivery> next();

  void ack(std::uint64_t id);
  void nak(std::uint64_t id, std::optional<std::uint64_t> delay_ms = std::nullopt);
  void term(std::uint64_t id, std::string_view reason = {});
  void wip(std::uint64_t id);  // written at once
  // Writes whatever confirmations are buffered.
  void flush();

 private:
  // Reads until one frame is parsed; nullopt at end of stream.
  std::optional<proto::Frame> read_frame();

  UniqueFd fd_;
  proto::DeliveryParser parser_;
  proto::Ready ready_;
  std::string out_;
  std::vector<char> in_;
  std::size_t in_begin_ = 0, in_end_ = 0;
};

}  // namespace jetfan
