#pragma once
// Appends protocol frames to a byte buffer. Pure; the caller owns the buffer and decides when to
// write it, so several frames go out in one write.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace jetfan::proto {

// jetfan -> handler
void append_ready(std::string& out, std::string_view handler, std::uint32_t max_unconfirmed,
                  const std::vector<std::string>& patterns);
// The length of the line append_ready writes, with its line end: it must fit in kMaxDeliveryLine.
std::size_t ready_line_length(std::string_view handler, std::uint32_t max_unconfirmed,
                              const std::vector<std::string>& patterns);
void append_msg(std::string& out, std::uint64_t id, std::string_view key, std::uint64_t stream_seq,
                std::uint64_t deliveries, std::string_view headers, std::string_view payload);
// Only the control line of a MSG ("MSG <id> <key> <seq> <deliveries> <header-bytes> <total-bytes>\r\n"),
// for a writer that sends the body from where it already is; the body and a final "\r\n" follow.
void append_msg_line(std::string& out, std::uint64_t id, std::string_view key, std::uint64_t stream_seq,
                     std::uint64_t deliveries, std::size_t header_bytes, std::size_t total_bytes);
void append_err(std::string& out, std::string_view reason);

// either way
void append_ping(std::string& out);
void append_pong(std::string& out);

// handler -> jetfan
void append_hello(std::string& out, std::string_view handler);
void append_ack(std::string& out, std::uint64_t id);
void append_nak(std::string& out, std::uint64_t id, std::optional<std::uint64_t> delay_ms = std::nullopt);
// Each \r or \n in `reason` becomes a space; a reason too long for the 1024-byte line is cut to fit,
// at a UTF-8 character boundary.
void append_term(std::string& out, std::uint64_t id, std::string_view reason = {});
void append_wip(std::string& out, std::uint64_t id);

}  // namespace jetfan::proto
