#pragma once
// What `jetfan tail` prints for one message: one line, made on the io thread only while a tail is
// connected, and only for messages its pattern matches. Pure.
//
//   2026-11-29T21:00:00.123Z a.one seq 42 delivery 1 -> builder, audit | headers: Trace: 7 | 13 bytes: {"m":3}
//
// The payload is shortened to kTailPayloadBytes, bytes outside printable ASCII shown as '.'.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "topic_pattern.hpp"

namespace jetfan {

inline constexpr std::size_t kTailPayloadBytes = 80;

struct TailItem {
  std::int64_t unix_ms = 0;
  std::string_view key;  // the subject, when unroutable
  std::uint64_t stream_seq = 0;
  std::uint64_t deliveries = 0;
  std::string_view headers;  // the NATS/1.0 header block, or empty
  std::string_view payload;
  HandlerMask recipients = 0;
  bool unroutable = false;
};

// `handler_names[i]` names handler index i.
void append_tail_record(std::string& out, const TailItem& item, const std::vector<std::string>& handler_names);
// The line a tail gets after it missed messages.
void append_tail_dropped(std::string& out, std::uint64_t dropped);

}  // namespace jetfan
