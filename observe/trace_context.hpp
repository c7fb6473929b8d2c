#pragma once
// W3C trace context (level 1) for jetfan's spans: the `traceparent` value a message may carry in its
// NATS header block, the ids of new spans, and the sampling decision by ratio.
//
// Pure: no I/O, no clock, no randomness of its own. The ids of new spans come from an IdSource the
// caller seeds; everything else is a function of its arguments. Every function may be called from
// any thread; an IdSource is one caller's (it is not synchronised).
//
// traceparent, as parse_traceparent reads it (https://www.w3.org/TR/trace-context/#traceparent-header):
//   "<version>-<trace-id>-<parent-id>-<flags>", each field lowercase hex: 2, 32, 16 and 2 digits.
//   - version ff is invalid; version 00 must be exactly those 55 characters;
//   - a later version is read as 00 is, from its first 55 characters, provided what follows (if
//     anything) starts a new field with '-' (the specification's room for versions to come);
//   - an all-zero trace id or parent id is invalid;
//   - spaces and tabs around the value are dropped (HTTP's OWS).
// format_traceparent always writes version 00.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace jetfan {

using TraceId = std::array<std::uint8_t, 16>;
using SpanId = std::array<std::uint8_t, 8>;

// Bit 0 of the trace flags: the caller sampled (records) this trace.
inline constexpr std::uint8_t kTraceFlagSampled = 0x01;

// The name of the header that carries it, as NATS headers spell it (the lookup ignores case).
inline constexpr std::string_view kTraceparentHeader = "traceparent";

struct TraceContext {
  TraceId trace_id{};
  SpanId span_id{};  // the parent-id of the header: the span of whoever sent it
  std::uint8_t flags = 0;

  bool sampled() const { return (flags & kTraceFlagSampled) != 0; }
  friend bool operator==(const TraceContext&, const TraceContext&) = default;
};

// False for the all-zero ids, which W3C and OpenTelemetry both call invalid.
bool is_valid(const TraceId& id);
bool is_valid(const SpanId& id);

// Lowercase hex, two digits a byte: 32 characters for a trace id, 16 for a span id.
std::string to_hex(const TraceId& id);
std::string to_hex(const SpanId& id);

// The context of a traceparent value, or nullopt if it is not a valid one (rules above).
std::optional<TraceContext> parse_traceparent(std::string_view value);

// "00-<trace id>-<span id>-<flags>". Precondition: both ids valid (it writes what it is given).
std::string format_traceparent(const TraceContext& context);

// The traceparent of a NATS header block ("NATS/1.0\r\nName: value\r\n...\r\n"), through
// proto::find_header: the first field named traceparent, any case; nullopt if there is none or it
// is not valid.
std::optional<TraceContext> traceparent_from_headers(std::string_view nats_header_block);

// OpenTelemetry's TraceIdRatioBased decision: the trace id's last 8 bytes, read big-endian and
// shifted right by one (63 bits), below ratio * 2^63. Deterministic: every process that samples by
// the same ratio keeps the same traces. ratio >= 1 keeps all, ratio <= 0 (and NaN) none.
bool sampled_by_ratio(const TraceId& trace_id, double ratio);

// Fresh trace and span ids from a 64-bit generator (splitmix64) the caller seeds, from
// std::random_device say, or with a constant in tests: the same seed gives the same ids. Never
// all-zero. Not a source of secrets, and not synchronised: one owner, one thread at a time.
class IdSource {
 public:
  explicit IdSource(std::uint64_t seed) : state_(seed) {}

  TraceId next_trace_id();
  SpanId next_span_id();

 private:
  std::uint64_t next_word();

  std::uint64_t state_;
};

}  // namespace jetfan
