#include "message_bytes.hpp"

#include <memory>
#include <string>

namespace jetfan {

namespace {
// Besides body and headers, a held message costs the upstream's record of it with its subject and
// reply subject, and jetfan's bookkeeping: a few hundred bytes, counted as one figure rather than
// measured per message (which would cost more than it tells).
constexpr std::size_t kPerMessageOverhead = 256;

// What the parts cost to keep, once their header block points at the one they made, if they made
// one (only once they sit where they stay: a short string's bytes move with it).
std::size_t settle(MessageParts& parts) {
  if (parts.made_headers) parts.headers = *parts.made_headers;
  return parts.payload.size() + parts.headers.size() + kPerMessageOverhead;
}

struct SubjectAndReply {
  std::string subject;
  std::string reply;
};
void free_subject_and_reply(void* bytes) { delete static_cast<SubjectAndReply*>(bytes); }
}  // namespace

MessageBytes::MessageBytes(MessageParts parts, MessageBytesArena& arena)
    : parts_(std::move(parts)), arena_(arena), size_(settle(parts_)) {
  arena_.bytes += size_;
  ++arena_.messages;
}

MessageBytes::~MessageBytes() {
  arena_.bytes -= size_;
  --arena_.messages;
}

MessageBytesPtr make_message_bytes(MessageParts&& parts, MessageBytesArena& arena) {
  return std::allocate_shared<const MessageBytes>(std::pmr::polymorphic_allocator<MessageBytes>(&arena.pool),
                                                  std::move(parts), arena);
}

MessageBytesPtr subject_and_reply_of(const MessageBytes& message, MessageBytesArena& arena) {
  auto kept =
      std::make_unique<SubjectAndReply>(SubjectAndReply{std::string(message.subject()), std::string(message.reply())});
  MessageParts parts{BytesOwner(nullptr, free_subject_and_reply), kept->subject, kept->reply, {}, {}};
  parts.owner.reset(kept.release());
  return make_message_bytes(std::move(parts), arena);
}

}  // namespace jetfan
