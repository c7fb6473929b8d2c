#pragma once
// Test support: a NATS publisher of a few lines over a plain TCP socket, for what cnats cannot send:
// a header block byte for byte (HPUB), with a NUL in a value, a status line, fields in any order, or
// no field at all, as a publisher in another language may. nats-server 2.9 and later store such
// blocks in JetStream as they are.

#include <chrono>
#include <cstdint>
#include <string>

#include "unique_fd.hpp"

namespace jetfan::testing {

class RawNats {
 public:
  // `url`: "nats://127.0.0.1:<port>" (Mesh::url()), a server without authentication.
  explicit RawNats(const std::string& url);
  // Publishes `payload` to `subject` with `headers` (a whole NATS/1.0 block; empty: a plain PUB),
  // and waits for JetStream's acknowledgement. Returns the stream sequence; throws if JetStream
  // refuses it or does not answer within `timeout`.
  std::uint64_t publish(const std::string& subject, const std::string& headers, const std::string& payload,
                        std::chrono::milliseconds timeout = std::chrono::seconds(10));

 private:
  void send(const std::string& bytes);
  // The next line from the server without its CRLF, answering PINGs; throws past the deadline.
  std::string line(std::chrono::steady_clock::time_point deadline);
  std::string bytes(std::size_t count, std::chrono::steady_clock::time_point deadline);
  void fill(std::chrono::steady_clock::time_point deadline);

  UniqueFd fd_;
  std::string buffer_;
  std::uint64_t next_reply_ = 1;
};

}  // namespace jetfan::testing
