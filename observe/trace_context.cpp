#include "trace_context.hpp"

#include <endian.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>

#include "nats_header.hpp"

namespace jetfan {

namespace {

// Where the fields of a traceparent sit; every version so far shares this prefix.
constexpr std::size_t kVersionAt = 0;
constexpr std::size_t kTraceIdAt = 3;
constexpr std::size_t kSpanIdAt = 36;
constexpr std::size_t kFlagsAt = 53;
constexpr std::size_t kTraceparentSize = 55;

constexpr std::string_view kHexDigits = "0123456789abcdef";

// Uppercase is refused on purpose: W3C asks for lowercase, and two spellings of one id would let
// two parsers disagree about whether two headers name the same trace.
int lower_hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

bool read_hex(std::string_view text, std::span<std::uint8_t> out) {
  if (text.size() != out.size() * 2) return false;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const int high = lower_hex_value(text[2 * i]);
    const int low = lower_hex_value(text[2 * i + 1]);
    if (high < 0 || low < 0) return false;
    out[i] = static_cast<std::uint8_t>(high * 16 + low);
  }
  return true;
}

void append_hex(std::string& out, std::span<const std::uint8_t> bytes) {
  for (const std::uint8_t byte : bytes) {
    out += kHexDigits[byte >> 4];
    out += kHexDigits[byte & 0x0f];
  }
}

bool is_ows(char c) { return c == ' ' || c == '\t'; }

std::string_view trim_ows(std::string_view text) {
  while (!text.empty() && is_ows(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_ows(text.back())) text.remove_suffix(1);
  return text;
}

template <std::size_t N>
bool all_zero(const std::array<std::uint8_t, N>& bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](std::uint8_t b) { return b == 0; });
}

// `word` as 8 bytes, most significant first, at `out`; and back. Every id is made and every
// sampling decision read this way, once per message: one store or load each, not a loop of bytes.
void store_big_endian(std::uint64_t word, std::uint8_t* out) {
  const std::uint64_t big = htobe64(word);
  std::memcpy(out, &big, sizeof big);
}
std::uint64_t load_big_endian(const std::uint8_t* in) {
  std::uint64_t big = 0;
  std::memcpy(&big, in, sizeof big);
  return be64toh(big);
}

}  // namespace

bool is_valid(const TraceId& id) { return !all_zero(id); }
bool is_valid(const SpanId& id) { return !all_zero(id); }

std::string to_hex(const TraceId& id) {
  std::string out;
  out.reserve(id.size() * 2);
  append_hex(out, id);
  return out;
}

std::string to_hex(const SpanId& id) {
  std::string out;
  out.reserve(id.size() * 2);
  append_hex(out, id);
  return out;
}

std::optional<TraceContext> parse_traceparent(std::string_view value) {
  value = trim_ows(value);
  if (value.size() < kTraceparentSize) return std::nullopt;
  std::array<std::uint8_t, 1> version{};
  if (!read_hex(value.substr(kVersionAt, 2), version) || version[0] == 0xff) return std::nullopt;
  // Version 00 has nothing after the flags; a later one may add fields, each after a '-', and we
  // read only the part it shares with 00.
  if (version[0] == 0x00 ? value.size() != kTraceparentSize
                         : value.size() > kTraceparentSize && value[kTraceparentSize] != '-') {
    return std::nullopt;
  }
  if (value[kTraceIdAt - 1] != '-' || value[kSpanIdAt - 1] != '-' || value[kFlagsAt - 1] != '-') return std::nullopt;
  TraceContext context;
  std::array<std::uint8_t, 1> flags{};
  if (!read_hex(value.substr(kTraceIdAt, 32), context.trace_id) ||
      !read_hex(value.substr(kSpanIdAt, 16), context.span_id) || !read_hex(value.substr(kFlagsAt, 2), flags)) {
    return std::nullopt;
  }
  if (!is_valid(context.trace_id) || !is_valid(context.span_id)) return std::nullopt;
  context.flags = flags[0];
  return context;
}

std::string format_traceparent(const TraceContext& context) {
  std::string out;
  out.reserve(kTraceparentSize);
  out += "00-";
  append_hex(out, context.trace_id);
  out += '-';
  append_hex(out, context.span_id);
  out += '-';
  append_hex(out, std::span<const std::uint8_t>(&context.flags, 1));
  return out;
}

std::optional<TraceContext> traceparent_from_headers(std::string_view nats_header_block) {
  const auto value = proto::find_header(nats_header_block, kTraceparentHeader);
  if (!value) return std::nullopt;
  return parse_traceparent(*value);
}

bool sampled_by_ratio(const TraceId& trace_id, double ratio) {
  // Written so that NaN falls to "never": every comparison with it is false.
  if (!(ratio > 0.0)) return false;
  if (ratio >= 1.0) return true;
  // The last 8 bytes, as OpenTelemetry's samplers read them: the part of the id W3C level 2 calls
  // random. One bit is shifted away so that ratio * 2^63 is exact in a double and fits a uint64_t.
  const std::uint64_t low = load_big_endian(trace_id.data() + 8);
  // ratio * 2^63, exact: a product with a power of two only moves the exponent.
  const auto threshold = static_cast<std::uint64_t>(ratio * 9223372036854775808.0);
  return (low >> 1) < threshold;
}

std::uint64_t IdSource::next_word() {
  // splitmix64: one add and a mix a word, every seed gives a full-period sequence, and its output
  // is well spread even from small or similar seeds (0, 1, 2 in tests), which matters for the
  // ratio sampler that reads these ids.
  state_ += 0x9e3779b97f4a7c15ULL;
  std::uint64_t z = state_;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

TraceId IdSource::next_trace_id() {
  TraceId id{};
  // All-zero is invalid; so rare that it is drawn again rather than patched.
  for (;;) {
    const std::uint64_t high = next_word();
    const std::uint64_t low = next_word();
    if ((high | low) == 0) continue;
    store_big_endian(high, id.data());
    store_big_endian(low, id.data() + 8);
    return id;
  }
}

SpanId IdSource::next_span_id() {
  SpanId id{};
  for (;;) {
    const std::uint64_t word = next_word();
    if (word == 0) continue;
    store_big_endian(word, id.data());
    return id;
  }
}

}  // namespace jetfan
