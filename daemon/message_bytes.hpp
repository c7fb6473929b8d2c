#pragma once
// MessageBytes: one message's bytes as jetfan received them from NATS, shared by everything that
// needs them: the dispatcher while the core holds the message, and every session whose output
// still has to write its body. A MSG to ten handlers writes the same bytes ten times and copies
// them never; they are freed when the last holder lets go.
//
// Every MessageBytes alive is counted in a LiveBytes, and lives in its pool; the LiveBytes must
// outlive them all (the daemon owns it, ahead of its io_context, whose pending operations may hold
// the last references).
//
// Thread: the io_context thread (the count is not atomic).

#include <cstddef>
#include <memory>
#include <memory_resource>
#include <string>
#include <string_view>

#include "nats_handles.hpp"
#include "node_pool.hpp"

namespace jetfan {

struct LiveBytes {
  std::size_t bytes = 0;  // of message bodies alive, wherever they are held
  std::size_t messages = 0;
  // Where each MessageBytes and its shared count are allocated: one per message, from a free list.
  NodePool pool;
};

class MessageBytes {
 public:
  // `headers` is the NATS/1.0 header block to forward, or empty.
  MessageBytes(NatsMsgPtr message, std::string headers, LiveBytes& live);
  ~MessageBytes();
  MessageBytes(const MessageBytes&) = delete;
  MessageBytes& operator=(const MessageBytes&) = delete;

  natsMsg* message() const { return message_.get(); }
  std::string_view subject() const { return natsMsg_GetSubject(message_.get()); }
  std::string_view headers() const { return headers_; }
  std::string_view payload() const {
    return {natsMsg_GetData(message_.get()), static_cast<std::size_t>(natsMsg_GetDataLength(message_.get()))};
  }
  // What it costs to keep: payload, headers and a fixed overhead. The figure max_held_bytes budgets.
  std::size_t size() const { return size_; }

 private:
  NatsMsgPtr message_;
  std::string headers_;
  LiveBytes& live_;
  std::size_t size_;
};

using SharedMessage = std::shared_ptr<const MessageBytes>;

// A MessageBytes allocated in `live`'s pool.
SharedMessage make_message_bytes(NatsMsgPtr message, std::string&& headers, LiveBytes& live);

}  // namespace jetfan
