#pragma once
// read_peer: what the dispatcher's unit tests and the session fuzzer share on the handler's side of
// a socketpair: everything jetfan has written so far, read without blocking and parsed by the
// protocol's own DeliveryParser.
//
// Thread: the caller's, which also runs the io_context of the session at the other end.

#include <functional>

#include "delivery_parser.hpp"

namespace jetfan {

enum class PeerReadEnd {
  kDrained,    // nothing more to read now
  kClosed,     // jetfan closed its end
  kMalformed,  // jetfan wrote something the parser refused: parser.error() says what
};

// Reads from `fd` (non-blocking reads; the descriptor stays the caller's) until it would block,
// handing each whole frame to `on_frame`. `parser` keeps a partial frame for the next call.
PeerReadEnd read_peer(int fd, proto::DeliveryParser& parser, const std::function<void(const proto::Frame&)>& on_frame);

}  // namespace jetfan
