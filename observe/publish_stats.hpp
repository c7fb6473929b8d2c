#pragma once
// PublishStats: what one handler's publishes through jetfan (protocol version 3's PUB) came to since
// jetfan started. daemon/HandlerPublisher keeps one per handler name; the status snapshot carries a
// copy (HandlerView::publishes) for `jetfan status`, its JSON and the metrics. Plain values.

#include <cstdint>

#include "histogram.hpp"

namespace jetfan {

struct PublishStats {
  // Answers, each PUB counted once under one of them.
  std::uint64_t stored = 0;      // PUBOK: stored anew
  std::uint64_t duplicates = 0;  // PUBOK ... 1: the stream had it already (a tied publish made again)
  std::uint64_t refused = 0;     // PUBERR before anything went to the server: not-allowed, bad-subject, ...
  std::uint64_t failed = 0;      // PUBERR no-stream or refused from the server, or server-down
  std::uint64_t timed_out = 0;   // PUBERR timeout: no answer in time (it may be stored)
  std::uint64_t in_flight = 0;   // sent to the server, waiting for its answer now
  LatencyHistogram latency;      // from sending to the server's answer, stored or not (timeouts not included)
};

}  // namespace jetfan
