#include "message_bytes.hpp"

namespace jetfan {

namespace {
// Besides body and headers, a held message costs the upstream's record of it with its subject and
// reply subject, and jetfan's bookkeeping: a few hundred bytes, counted as one figure rather than
// measured per message (which would cost more than it tells).
constexpr std::size_t kPerMessageOverhead = 256;
}  // namespace

MessageBytes::MessageBytes(MessageParts parts, MessageBytesArena& arena)
    : parts_(std::move(parts)),
      arena_(arena),
      size_(parts_.payload.size() + parts_.headers.size() + kPerMessageOverhead) {
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

}  // namespace jetfan
