#pragma once
// MessageBytes: one message's bytes as jetfan received them from JetStream, shared by everything
// that needs them: the dispatcher while the core holds the message, and every session whose output
// still has to write its body. A MSG to ten handlers writes the same bytes ten times and copies
// them never; they are freed when the last holder lets go.
//
// The bytes stay where the upstream put them (a cnats natsMsg, or a test's strings): a
// MessageBytes holds views into them and the owner that frees them, so nothing here knows cnats.
// The one exception is a header block the upstream had to make (JetStreamReader's rebuild from
// cnats's parse, when the block as received cannot be read): the MessageBytes keeps that string.
//
// Every MessageBytes alive is counted in a MessageBytesArena, and allocated from its pool; the
// arena must outlive them all (the daemon owns it, ahead of its io_context, whose pending
// operations may hold the last references).
//
// Thread: the io_context thread (the count is not atomic).

#include <cstddef>
#include <memory>
#include <memory_resource>
#include <optional>
#include <string>
#include <string_view>

#include "node_pool.hpp"

namespace jetfan {

struct MessageBytesArena {
  std::size_t bytes = 0;  // of message bodies alive, wherever they are held
  std::size_t messages = 0;
  // Where each MessageBytes and its shared count are allocated: one per message, from a free list.
  NodePool pool;
};

// Frees the storage a message's views point into; a plain function, so owning costs no allocation.
using BytesOwner = std::unique_ptr<void, void (*)(void*)>;

// What a message is made of. Every view points into what `owner` keeps alive.
struct MessageParts {
  BytesOwner owner{nullptr, nullptr};
  std::string_view subject;
  std::string_view reply;    // the $JS.ACK subject the server is answered on
  std::string_view headers;  // the NATS/1.0 header block to forward, as received, or empty
  std::string_view payload;
  // A header block made for this message rather than found in its bytes: when set, it is the
  // block, and `headers` is not read. Costs an allocation; the message path sets it only when the
  // block as received cannot be had (jetstream_reader.hpp).
  std::optional<std::string> made_headers;
};

class MessageBytes {
 public:
  MessageBytes(MessageParts parts, MessageBytesArena& arena);
  ~MessageBytes();
  MessageBytes(const MessageBytes&) = delete;
  MessageBytes& operator=(const MessageBytes&) = delete;

  std::string_view subject() const { return parts_.subject; }
  std::string_view reply() const { return parts_.reply; }
  std::string_view headers() const { return parts_.headers; }
  std::string_view payload() const { return parts_.payload; }
  // What it costs to keep: payload, headers and a fixed overhead. The figure max_held_bytes budgets.
  std::size_t size() const { return size_; }

 private:
  MessageParts parts_;
  MessageBytesArena& arena_;
  std::size_t size_;
};

using MessageBytesPtr = std::shared_ptr<const MessageBytes>;

// A MessageBytes allocated in `arena`'s pool.
MessageBytesPtr make_message_bytes(MessageParts&& parts, MessageBytesArena& arena);
// A copy of only `message`'s subject and reply subject, for a message of which nothing else is
// needed any more (settled, waiting to be acked): it costs the fixed overhead alone.
MessageBytesPtr subject_and_reply_of(const MessageBytes& message, MessageBytesArena& arena);

}  // namespace jetfan
