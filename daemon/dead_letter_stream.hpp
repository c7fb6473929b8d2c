#pragma once
// The JetStream API requests `jetfan dlq list` and `jetfan redrive` make of a dead-letter stream,
// and what their answers say. Pure: text in, values out; the dispatcher sends and times them
// (dispatcher_redrive.cpp).
//
// Dead letters are read straight from their stream by sequence, with no consumer:
//   $JS.API.STREAM.NAMES            {"subject": S}                   which stream captures S
//   $JS.API.STREAM.MSG.GET.<stream> {"seq": N, "next_by_subj": S}    the first of S at N or later
//   $JS.API.STREAM.MSG.GET.<stream> {"last_by_subj": S}              the last of S (where --all ends)
//   $JS.API.STREAM.MSG.DELETE.<stream> {"seq": N}                    deletes one (nats-server 2.9 on)
//
// Thread: any.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace jetfan {

std::string stream_names_request(std::string_view subject);
std::string msg_get_next_request(std::uint64_t seq, std::string_view subject);
std::string msg_get_last_request(std::string_view subject);
std::string msg_delete_request(std::uint64_t seq);

// One message of the stream, as MSG.GET returns it.
struct StoredLetter {
  std::uint64_t seq = 0;
  std::string subject;
  std::string headers;  // a NATS/1.0 block, or empty
  std::string payload;
  std::string time;  // when the stream stored it, as the server wrote it (RFC 3339)
};
struct NoMessage {};  // 404: nothing at or after that sequence
struct ApiError {
  std::string what;
};

// The stream the STREAM.NAMES answer names first, or why there is none.
std::variant<std::string, ApiError> parse_stream_names(std::string_view json);
std::variant<StoredLetter, NoMessage, ApiError> parse_msg_get(std::string_view json);
// nullopt: deleted. Else why not.
std::optional<std::string> parse_msg_delete(std::string_view json);

// Standard base64 (with or without padding); nullopt when it is not base64.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace jetfan
