#include "peer_reader.hpp"

#include <sys/socket.h>

#include <array>
#include <string_view>

namespace jetfan {

PeerReadEnd read_peer(int fd, proto::DeliveryParser& parser, const std::function<void(const proto::Frame&)>& on_frame) {
  std::array<char, 65536> buffer;
  for (;;) {
    const ssize_t got = ::recv(fd, buffer.data(), buffer.size(), MSG_DONTWAIT);
    if (got == 0) return PeerReadEnd::kClosed;
    if (got < 0) return PeerReadEnd::kDrained;  // EAGAIN; after an error too, nothing more comes now
    std::string_view input(buffer.data(), static_cast<std::size_t>(got));
    proto::Frame frame;
    for (;;) {
      const auto result = parser.parse(input, frame);
      if (result == proto::DeliveryParser::Result::kNeedMore) break;
      if (result != proto::DeliveryParser::Result::kFrame) return PeerReadEnd::kMalformed;
      on_frame(frame);
    }
  }
}

}  // namespace jetfan
