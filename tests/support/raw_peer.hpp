#pragma once
// Test support: a handler peer that speaks the protocol byte by byte, so a test can send exactly
// what it wants (including garbage) and see exactly what jetfan answers.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "delivery_parser.hpp"
#include "unique_fd.hpp"

namespace jetfan::testing {

class RawPeer {
 public:
  explicit RawPeer(const std::string& socket_path);
  void send(std::string_view bytes);
  // The next frame from jetfan; nullopt when it closed the connection or nothing came in time.
  std::optional<proto::Frame> next(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // True once jetfan has closed the connection (reads until end of stream).
  bool wait_closed(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // Sends PING and waits for the PONG: everything sent before it has been processed.
  // Frames that arrive first are kept for next().
  bool sync();
  int fd() const { return fd_.get(); }
  // Bytes sent and received on this connection so far.
  std::size_t sent_bytes() const { return sent_; }
  std::size_t received_bytes() const { return received_; }

 private:
  UniqueFd fd_;
  proto::DeliveryParser parser_;
  std::string buffer_;
  std::size_t offset_ = 0;
  bool eof_ = false;
  std::size_t sent_ = 0;
  std::size_t received_ = 0;
  std::vector<proto::Frame> kept_;
};

// Reads frames until a MSG arrives and returns it, passing over READY, PING and PONG. Throws (so
// the test fails) if ERR comes first, or jetfan closes the connection or sends nothing in `timeout`.
proto::Frame next_msg(RawPeer& peer, std::chrono::milliseconds timeout = std::chrono::seconds(10));

// Says HELLO as `handler` in protocol version 3 (publishing's) and reads the READY. Throws (so the
// test fails) unless jetfan answers READY in version 3.
void hello_v3(RawPeer& peer, const std::string& handler = "builder");

}  // namespace jetfan::testing
