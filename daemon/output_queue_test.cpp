#include <catch2/catch.hpp>

#include <string>

#include "output_queue.hpp"

using jetfan::MessageBytesArena;
using jetfan::MessageParts;
using jetfan::OutputQueue;

namespace {

// What the iovecs offered now hold, joined.
std::string joined(std::span<const iovec> pieces) {
  std::string bytes;
  for (const auto& piece : pieces) bytes.append(static_cast<const char*>(piece.iov_base), piece.iov_len);
  return bytes;
}

}  // namespace

TEST_CASE("output queue: a batch is written in pieces, in order, across partial writes and iovec limits", "[unit]") {
  MessageBytesArena arena;
  OutputQueue out;
  MessageParts parts;
  parts.headers = "NATS/1.0\r\nA: 1\r\n\r\n";
  parts.payload = "payload";
  const auto body = jetfan::make_message_bytes(std::move(parts), arena);
  std::string expected;
  for (int i = 0; i < 3; ++i) {
    const std::string line = "MSG " + std::to_string(i) + "\r\n";
    out.append(line);
    out.append_body(body);
    out.append("\r\n");
    expected += line + "NATS/1.0\r\nA: 1\r\n\r\npayload\r\n";
  }
  out.take_batch();
  CHECK(out.empty());  // the queue starts afresh; what was queued is the batch
  CHECK(joined(out.unwritten(1000)) == expected);

  // Write it back as a peer that takes 5 bytes at a time and a sendmsg that takes 2 iovecs.
  std::string sent;
  bool done = false;
  while (!done) {
    const auto pieces = out.unwritten(2);
    REQUIRE_FALSE(pieces.empty());
    REQUIRE(pieces.size() <= 2);
    const std::string offered = joined(pieces);
    const std::size_t take = std::min<std::size_t>(5, offered.size());
    sent += offered.substr(0, take);
    done = out.written(take);
  }
  CHECK(sent == expected);
  CHECK(out.unwritten(8).empty());
  out.done_writing();
  CHECK(out.empty());
  CHECK(out.owned_bytes() == 0);
}
