#include "message_bytes.hpp"

namespace jetfan {

namespace {
// Besides body and headers, a held message costs cnats's natsMsg with its subject and reply subject,
// and jetfan's bookkeeping: a few hundred bytes, counted as one figure rather than measured per
// message (which would cost more than it tells).
constexpr std::size_t kPerMessageOverhead = 256;

std::size_t footprint(natsMsg* message, const std::string& headers) {
  return static_cast<std::size_t>(natsMsg_GetDataLength(message)) + headers.size() + kPerMessageOverhead;
}
}  // namespace

MessageBytes::MessageBytes(NatsMsgPtr message, std::string headers, LiveBytes& live)
    : message_(std::move(message)),
      headers_(std::move(headers)),
      live_(live),
      size_(footprint(message_.get(), headers_)) {
  live_.bytes += size_;
  ++live_.messages;
}

MessageBytes::~MessageBytes() {
  live_.bytes -= size_;
  --live_.messages;
}

SharedMessage make_message_bytes(NatsMsgPtr message, std::string&& headers, LiveBytes& live) {
  return std::allocate_shared<const MessageBytes>(std::pmr::polymorphic_allocator<MessageBytes>(&live.pool),
                                                  std::move(message), std::move(headers), live);
}

}  // namespace jetfan
