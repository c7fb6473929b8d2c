#pragma once
// HeldMessages: the bytes of every message the dispatcher holds, by the handle the core knows it by
// (MessageHandle), with what was read from it on arrival: its key, stream sequence, delivery count
// and when the stream stored it. An entry is added when a message arrives (or a dead letter is
// redriven) and goes at the core's kRelease; at its kTrim only the subject and reply subject are
// kept (a settled message waiting for AckPolicy all's floor needs nothing else).
//
// Memory: one node per held message, from a free list (core/NodePool), not malloc; the bytes are
// shared with the MSG writes that reference them (MessageBytes).
// Thread: the io_context thread only.

#include <cstdint>
#include <memory_resource>
#include <string_view>
#include <unordered_map>

#include "dispatch_core.hpp"
#include "message_bytes.hpp"
#include "node_pool.hpp"

namespace jetfan {

struct HeldMessage {
  MessageBytesPtr message;
  std::string_view key;  // points into message's subject; empty when unroutable
  std::uint64_t stream_seq = 0;
  std::uint64_t deliveries = 0;
  std::uint64_t published_ns = 0;  // when the stream stored it; 0: not known
};

class HeldMessages {
  using Map = std::pmr::unordered_map<MessageHandle, HeldMessage>;

 public:
  using iterator = Map::iterator;

  // Precondition: `handle` is not held.
  HeldMessage& add(MessageHandle handle, HeldMessage&& held) {
    return map_.emplace(handle, std::move(held)).first->second;
  }
  iterator find(MessageHandle handle) { return map_.find(handle); }
  iterator end() { return map_.end(); }
  void erase(iterator held) { map_.erase(held); }
  void erase(MessageHandle handle) { map_.erase(handle); }
  // Keeps only the subject and reply subject of the message (and its key, now in the copy).
  void trim(HeldMessage& held, MessageBytesArena& arena);
  std::size_t size() const { return map_.size(); }
  template <typename F>
  void each(F&& f) const {
    for (const auto& entry : map_) f(entry.second);
  }

 private:
  NodePool pool_;  // declared first: it outlives the map that uses it
  Map map_{&pool_};
};

}  // namespace jetfan
