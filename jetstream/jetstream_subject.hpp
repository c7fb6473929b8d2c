#pragma once
// Pure helpers for JetStream subjects. No I/O.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace jetfan::jetstream {

// A message's key: its subject less `prefix`. nullopt when the subject does not start with the
// prefix or nothing is left after it.
std::optional<std::string_view> key_of(std::string_view subject, std::string_view prefix);

// What a JetStream ack subject says about the message it acknowledges. Both forms are understood:
//   $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<tm>.<pending>
//   $JS.ACK.<domain>.<account>.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<tm>.<pending>[.<token>]
struct AckSubject {
  std::uint64_t deliveries = 0;
  std::uint64_t stream_seq = 0;
  std::uint64_t consumer_seq = 0;
  // <tm>: when the message was stored in the stream, in nanoseconds since the Unix epoch (the
  // server's wall clock); 0 when the token is not a number.
  std::uint64_t published_ns = 0;
};
std::optional<AckSubject> parse_ack_subject(std::string_view reply);

// The pull request subject for a consumer.
std::string pull_subject(std::string_view stream, std::string_view durable);

}  // namespace jetfan::jetstream
