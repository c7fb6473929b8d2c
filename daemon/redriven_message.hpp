#pragma once
// RedrivenMessage: a dead letter made into the message its handler gets again on a redrive (jetfan
// dlq redrive): the subject it was published on (the letter's Jetfan-Subject, else the letter's
// own), its header block with the letter's Jetfan-* fields (redriven_headers, dead_letters.hpp),
// its payload, and its stream sequence (Jetfan-Sequence; 0 when the letter has none). So the
// handler gets it as it would have got the message, byte for byte, plus why it came back.
//
// Anyone who may publish to a dead-letter subject can forge a dead letter, so none is trusted:
// why_not_redrivable() is asked first, and a letter it refuses never reaches a handler.
//
// Thread: the io_context thread (the arena's).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "message_bytes.hpp"
#include "stream_message.hpp"

namespace jetfan {

struct RedrivenMessage {
  // Its own bytes, counted in the arena: the letter may go once made.
  MessageBytesPtr bytes;
  std::uint64_t original_seq = 0;
};

// Why `letter` may not be redriven to a handler with `patterns`, or nullopt: it may. Its subject (as
// above) must be one a NATS server takes for a publish (1 to kMaxRedriveSubject bytes, tokens
// separated by '.', none empty or a wildcard, no byte below '!' or DEL), start with `strip_prefix`,
// and leave a key that one of `patterns` matches. So the MSG line a handler gets holds only checked
// values and stays within proto::kMaxDeliveryLine. Pure.
inline constexpr std::size_t kMaxRedriveSubject = 4096;  // nats-server's default max_control_line
std::optional<std::string> why_not_redrivable(const jetstream::StoredMessage& letter,
                                              const std::vector<std::string>& patterns, std::string_view strip_prefix);

// The letter's subject as redriven_message() gives it: its Jetfan-Subject, else its own.
std::string_view redriven_subject(const jetstream::StoredMessage& letter);

// `arena` must outlive the bytes (as make_message_bytes). Precondition: why_not_redrivable() said
// nothing against `letter`.
RedrivenMessage redriven_message(const jetstream::StoredMessage& letter, MessageBytesArena& arena);

}  // namespace jetfan
