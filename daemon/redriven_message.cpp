#include "redriven_message.hpp"

#include <charconv>
#include <memory>
#include <string>

#include "dead_letters.hpp"
#include "nats_header.hpp"

namespace jetfan {

RedrivenMessage redriven_message(const jetstream::StoredMessage& letter, MessageBytesArena& arena) {
  // One allocation for the three strings the views point into, freed with the MessageBytes.
  struct LetterBytes {
    std::string subject, headers, payload;
  };
  auto bytes = std::make_unique<LetterBytes>();
  const auto original_subject = proto::find_header(letter.headers, "Jetfan-Subject");
  bytes->subject = original_subject ? std::string(*original_subject) : letter.subject;
  bytes->headers = redriven_headers(letter.headers);
  bytes->payload = letter.payload;
  MessageParts parts{BytesOwner(nullptr, [](void* owned) { delete static_cast<LetterBytes*>(owned); }),
                     bytes->subject,
                     {},
                     bytes->headers,
                     bytes->payload};
  parts.owner.reset(bytes.release());
  RedrivenMessage made{make_message_bytes(std::move(parts), arena), 0};
  if (const auto seq = proto::find_header(letter.headers, "Jetfan-Sequence")) {
    std::from_chars(seq->data(), seq->data() + seq->size(), made.original_seq);
  }
  return made;
}

}  // namespace jetfan
