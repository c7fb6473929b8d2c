#pragma once
// RedrivenMessage: a dead letter made into the message its handler gets again on a redrive (jetfan
// dlq redrive): the subject it was published on (the letter's Jetfan-Subject, else the letter's
// own), its header block with the letter's Jetfan-* fields (redriven_headers, dead_letters.hpp),
// its payload, and its stream sequence (Jetfan-Sequence; 0 when the letter has none). So the
// handler gets it as it would have got the message, byte for byte, plus why it came back.
//
// Thread: the io_context thread (the arena's).

#include <cstdint>

#include "message_bytes.hpp"
#include "stream_message.hpp"

namespace jetfan {

struct RedrivenMessage {
  // Its own bytes, counted in the arena: the letter may go once made.
  MessageBytesPtr bytes;
  std::uint64_t original_seq = 0;
};

// `arena` must outlive the bytes (as make_message_bytes).
RedrivenMessage redriven_message(const jetstream::StoredMessage& letter, MessageBytesArena& arena);

}  // namespace jetfan
