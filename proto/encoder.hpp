#pragma once
// Appends protocol frames to a byte buffer. Pure; the caller owns the buffer and decides when to
// write it, so several frames go out in one write.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol.hpp"

namespace jetfan::proto {

// jetfan -> handler
void append_ready(std::string& out, std::uint32_t version, std::string_view handler, std::uint32_t max_unconfirmed,
                  const std::vector<std::string>& patterns);
// The length of the line append_ready writes, with its line end: it must fit in kMaxDeliveryLine.
// (With the latest version, whose number is the longest.)
std::size_t ready_line_length(std::string_view handler, std::uint32_t max_unconfirmed,
                              const std::vector<std::string>& patterns);
// A whole MSG of version 1.
void append_msg(std::string& out, std::uint64_t id, std::string_view key, std::uint64_t stream_seq,
                std::uint64_t deliveries, std::string_view headers, std::string_view payload);
// A whole MSG in the layout of `version`: a version 2 MSG carries d.published_ns, d.subject and
// d.server_deliveries too, a version 3 MSG d.traceparent after those ("-" when it is empty).
void append_msg(std::string& out, std::uint32_t version, const Delivery& d);
// Only the control line of a MSG ("MSG <id> <key> <seq> <deliveries> <header-bytes> <total-bytes>\r\n"),
// for a writer that sends the body from where it already is; the body and a final "\r\n" follow.
void append_msg_line(std::string& out, std::uint64_t id, std::string_view key, std::uint64_t stream_seq,
                     std::uint64_t deliveries, std::size_t header_bytes, std::size_t total_bytes);
// The same in version 2: "MSG <id> <key> <seq> <deliveries> <header-bytes> <total-bytes> <published> <subject>
// <server-deliveries>\r\n". `subject` is a NATS subject: not empty, no blanks.
void append_msg2_line(std::string& out, std::uint64_t id, std::string_view key, std::uint64_t stream_seq,
                      std::uint64_t deliveries, std::size_t header_bytes, std::size_t total_bytes,
                      std::uint64_t published_ns, std::string_view subject, std::uint64_t server_deliveries);
// The same in version 3: version 2's line with " <traceparent>" before the "\r\n". `traceparent` is
// the W3C traceparent of jetfan's span of this delivery, or empty when jetfan does not trace it:
// "-" is written then, and for any value that is not a traceparent (is_traceparent), which every
// client would refuse.
void append_msg3_line(std::string& out, std::uint64_t id, std::string_view key, std::uint64_t stream_seq,
                      std::uint64_t deliveries, std::size_t header_bytes, std::size_t total_bytes,
                      std::uint64_t published_ns, std::string_view subject, std::uint64_t server_deliveries,
                      std::string_view traceparent);
void append_err(std::string& out, std::string_view reason);
// Version 3 on, the answers to a PUB: "PUBOK <id> <stream> <seq> <0|1>" (stored; 1: a duplicate of a
// copy stored before, whose seq it is) and "PUBERR <id> <code>[ <reason>]", `code` one of
// to_string(PublishError), the reason made one line and cut so that the line fits 1024 bytes.
void append_pubok(std::string& out, std::uint64_t id, std::string_view stream, std::uint64_t seq, bool duplicate);
void append_puberr(std::string& out, std::uint64_t id, std::string_view code, std::string_view reason = {});

// either way
void append_ping(std::string& out);
void append_pong(std::string& out);

// handler -> jetfan
// `version` is the highest the handler speaks (HELLO <handler> <version>).
void append_hello(std::string& out, std::string_view handler, std::uint32_t version = kLatestVersion);
void append_ack(std::string& out, std::uint64_t id);
// A NAK's or TERM's reason: each \r or \n in it becomes a space, and one too long for the 1024-byte
// line is cut to fit, at a UTF-8 character boundary. An empty reason is not written.
// A NAK's reason is written from protocol version 3 on ("NAK <id> <delay-ms> <reason>", with "-" for
// no delay) and left out in versions 1 and 2: `version` is the one the connection speaks.
void append_nak(std::string& out, std::uint64_t id, std::optional<std::uint64_t> delay_ms = std::nullopt,
                std::string_view reason = {}, std::uint32_t version = kLatestVersion);
void append_term(std::string& out, std::uint64_t id, std::string_view reason = {});
void append_wip(std::string& out, std::uint64_t id);
// Version 3 on: "PUB <id> <subject> <header-bytes> <total-bytes>[ <delivery-id> <index>]\r\n", the
// header block (empty, or "NATS/1.0\r\n...\r\n\r\n") and the payload, then "\r\n". `subject` is
// one word (the caller checks it: is_publish_subject). With `tied_to`, the publish is tied to that
// delivery of the connection, as the handler's `tie_index`-th publish for it.
void append_pub(std::string& out, std::uint64_t id, std::string_view subject, std::string_view headers,
                std::string_view payload, std::optional<std::uint64_t> tied_to = std::nullopt,
                std::uint64_t tie_index = 0);

}  // namespace jetfan::proto
