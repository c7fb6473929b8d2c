#pragma once
// Whether a stream a handler publishes to keeps its duplicates long enough for tied publishes
// (proto/PROTOCOL.md "Publishing"): the copy a redelivery publishes again is dropped only within the
// stream's duplicate_window, so the window should outlast the redeliveries of one message. jetfan
// takes their span to be the consumer's AckWait times the deliveries a message may have: the
// consumer's MaxDeliver, or the handler's retry.max_attempts when that is smaller (jetfan gives the
// message up after it); with neither, they are unbounded and no window is long enough. An estimate:
// a handler that keeps a delivery alive with WIP, or NAK delays longer than AckWait, stretch it.
// Pure.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "config.hpp"

namespace jetfan {

struct DuplicateWindowFacts {
  std::string_view handler;
  std::string_view stream;  // the stream that captures what the handler publishes
  Duration duplicate_window{0};
  Duration ack_wait{0};            // the consumer's
  std::int64_t max_deliver = -1;   // the consumer's; -1 (or 0): unlimited
  std::uint32_t max_attempts = 0;  // the handler's retry.max_attempts; 0: unlimited
};

// The span the window should cover; nullopt when the deliveries are unbounded.
std::optional<Duration> redelivery_span(const DuplicateWindowFacts& facts);
// A warning to log when the window is shorter than that span (or the span unbounded); nullopt when
// it is long enough.
std::optional<std::string> duplicate_window_problem(const DuplicateWindowFacts& facts);

}  // namespace jetfan
