#pragma once
// A message read straight from a stream by sequence, with no consumer, and its deletion:
//   $JS.API.STREAM.MSG.GET.<stream>     {"seq": N, "next_by_subj": S}  the first of S at N or later
//   $JS.API.STREAM.MSG.GET.<stream>     {"last_by_subj": S}            the last of S
//   $JS.API.STREAM.MSG.DELETE.<stream>  {"seq": N}                     deletes N (nats-server 2.9 on)
// The request subjects and bodies, and the reading of the answers (the message's headers and data
// base64-encoded). Pure. Thread: any.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "api_error.hpp"

namespace jetfan::jetstream {

std::string msg_get_subject(std::string_view stream);
std::string msg_delete_subject(std::string_view stream);

// The first message at or after `seq` whose subject matches `filter` (a subject with wildcards;
// empty: any, ">").
std::string msg_get_next_request(std::uint64_t seq, std::string_view filter);
// The last message whose subject matches `filter`.
std::string msg_get_last_request(std::string_view filter);
std::string msg_delete_request(std::uint64_t seq);

// One message of the stream, as MSG.GET returns it.
struct StoredMessage {
  std::uint64_t seq = 0;
  std::string subject;
  std::string headers;  // its NATS/1.0 header block, or empty
  std::string payload;
  std::string time;  // when the stream stored it, as the server wrote it (RFC 3339)
};

// No message at or after the sequence asked for matches (all were deleted, or none is left): the
// server's "no message found" (err_code 10037) and only that; a missing stream is an ApiError.
struct NoMessage {};

// The message, none, or the server's error or why the answer cannot be read (no message, a seq
// that is not a number above 0, no subject, headers or data that are not base64).
std::variant<StoredMessage, NoMessage, ApiError> parse_msg_get(std::string_view json_text);

// nullopt: deleted. Else the server's error, or why the answer says neither.
std::optional<ApiError> parse_msg_delete(std::string_view json_text);

}  // namespace jetfan::jetstream
