#pragma once
// A message read straight from the stream ($JS.API.STREAM.MSG.GET.<stream>), not through the
// consumer: what jetfan needs of it to know its order keys. The request body and the reading of the
// server's answer (JSON, subject and headers base64-encoded) are here; the request is the reader's
// (jetstream_reader.hpp). Pure.

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

namespace jetfan {

struct StreamMessage {
  std::uint64_t stream_seq = 0;
  std::string subject;
  std::string headers;  // its NATS/1.0 header block, or empty
};

// The first message at or after `seq` whose subject matches `filter` (a subject with wildcards;
// ">" for any), as a MSG.GET request body.
std::string stream_message_request(std::uint64_t seq, std::string_view filter);

// No message at or after the sequence asked for matches (all were deleted, or none is left).
struct NoStreamMessage {};

// The message, none, or what was wrong with the answer (the server's own error included).
std::variant<StreamMessage, NoStreamMessage, std::string> parse_stream_message(std::string_view json_text);

}  // namespace jetfan
