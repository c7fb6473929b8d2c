#pragma once
// OrderBy: what an ordered handler's messages are ordered by (handlers[].order_by in the config):
// two messages with the same order key reach the handler one at a time, in stream order. kNone:
// unordered, as by default. Plain data; config/ reads and writes its spelling ("key", "token:N",
// "header:NAME", "none"), core/Router computes the key of each message.

#include <cstddef>
#include <string>

namespace jetfan {

struct OrderBy {
  enum class Kind { kNone, kKey, kToken, kHeader };
  Kind kind = Kind::kNone;
  std::size_t token = 0;  // kToken: 1-based index of the '.'-separated token of the message key
  std::string header;     // kHeader: the NATS header whose value is the order key
  bool operator==(const OrderBy&) const = default;
};

}  // namespace jetfan
