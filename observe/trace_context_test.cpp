#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <string>

#include "trace_context.hpp"

using namespace jetfan;

namespace {

constexpr std::string_view kTraceHex = "4bf92f3577b34da6a3ce929d0e0e4736";
constexpr std::string_view kSpanHex = "00f067aa0ba902b7";

const TraceId kTrace{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36};
const SpanId kSpan{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7};

std::string header(std::string_view version, std::string_view trace, std::string_view span, std::string_view flags) {
  return std::string(version) + "-" + std::string(trace) + "-" + std::string(span) + "-" + std::string(flags);
}

// A trace id whose last 8 bytes read `low` big-endian.
TraceId with_low_bits(std::uint64_t low) {
  TraceId id{};
  id[0] = 1;
  for (int i = 0; i < 8; ++i) id[8 + i] = static_cast<std::uint8_t>(low >> (56 - 8 * i));
  return id;
}

}  // namespace

TEST_CASE("parse_traceparent reads valid values", "[trace_context]") {
  struct Case {
    std::string value;
    std::uint8_t flags;
  };
  const std::string base = header("00", kTraceHex, kSpanHex, "01");
  const Case cases[] = {
      {base, 0x01},
      {header("00", kTraceHex, kSpanHex, "00"), 0x00},
      {header("00", kTraceHex, kSpanHex, "ff"), 0xff},  // unknown flags are kept
      {" \t" + base + "\t ", 0x01},                     // OWS around it
      {header("01", kTraceHex, kSpanHex, "01"), 0x01},  // a later version, exactly 55 characters
      {header("cc", kTraceHex, kSpanHex, "09") + "-what-the-future-holds", 0x09},
      {header("fe", kTraceHex, kSpanHex, "01") + "-", 0x01},
  };
  for (const auto& c : cases) {
    CAPTURE(c.value);
    const auto parsed = parse_traceparent(c.value);
    REQUIRE(parsed.has_value());
    CHECK(parsed->trace_id == kTrace);
    CHECK(parsed->span_id == kSpan);
    CHECK(parsed->flags == c.flags);
    CHECK(parsed->sampled() == ((c.flags & 1) != 0));
  }
}

TEST_CASE("parse_traceparent refuses invalid values", "[trace_context]") {
  const std::string zero_trace(32, '0');
  const std::string zero_span(16, '0');
  const std::string base = header("00", kTraceHex, kSpanHex, "01");
  const std::string cases[] = {
      "",
      "   ",
      base.substr(0, 54),                                                // one short
      base + "-",                                                        // version 00 has nothing after the flags
      base + "0",                                                        //
      header("01", kTraceHex, kSpanHex, "01") + "0",                     // a later version: more only after '-'
      header("ff", kTraceHex, kSpanHex, "01"),                           // version ff is invalid
      header("0g", kTraceHex, kSpanHex, "01"),                           // not hex
      header("0A", kTraceHex, kSpanHex, "01"),                           // uppercase version
      header("00", "4BF92F3577B34DA6A3CE929D0E0E4736", kSpanHex, "01"),  // uppercase trace id
      header("00", kTraceHex, "00F067AA0BA902B7", "01"),                 // uppercase span id
      header("00", kTraceHex, kSpanHex, "0F"),                           // uppercase flags
      header("00", zero_trace, kSpanHex, "01"),                          // all-zero trace id
      header("00", kTraceHex, zero_span, "01"),                          // all-zero span id
      header("00", std::string(kTraceHex.substr(1)) + "0" + "0", kSpanHex, "1"),  // fields shifted
      "00_" + std::string(kTraceHex) + "-" + std::string(kSpanHex) + "-01",       // wrong separator
      "00-" + std::string(kTraceHex) + "_" + std::string(kSpanHex) + "-01",
      "00-" + std::string(kTraceHex) + "-" + std::string(kSpanHex) + "_01",
      header("00", std::string(kTraceHex.substr(0, 31)) + "x", kSpanHex, "01"),
      header("00", kTraceHex, std::string(kSpanHex.substr(0, 15)) + " ", "01"),
      "\n" + base,  // only spaces and tabs are OWS
      base + "\r",
  };
  for (const auto& value : cases) {
    CAPTURE(value);
    CHECK_FALSE(parse_traceparent(value).has_value());
  }
}

TEST_CASE("format_traceparent writes version 00 and parses back", "[trace_context]") {
  const TraceContext context{kTrace, kSpan, 0x01};
  CHECK(format_traceparent(context) == header("00", kTraceHex, kSpanHex, "01"));
  CHECK(format_traceparent(TraceContext{kTrace, kSpan, 0xa0}) == header("00", kTraceHex, kSpanHex, "a0"));
  // A later version comes back as 00.
  const auto future = parse_traceparent(header("42", kTraceHex, kSpanHex, "00") + "-extra");
  REQUIRE(future.has_value());
  CHECK(format_traceparent(*future) == header("00", kTraceHex, kSpanHex, "00"));

  IdSource ids(7);
  for (int i = 0; i < 200; ++i) {
    const TraceContext made{ids.next_trace_id(), ids.next_span_id(), static_cast<std::uint8_t>(i)};
    const auto back = parse_traceparent(format_traceparent(made));
    REQUIRE(back.has_value());
    CHECK(*back == made);
  }
}

TEST_CASE("to_hex and is_valid", "[trace_context]") {
  CHECK(to_hex(kTrace) == kTraceHex);
  CHECK(to_hex(kSpan) == kSpanHex);
  CHECK_FALSE(is_valid(TraceId{}));
  CHECK_FALSE(is_valid(SpanId{}));
  CHECK(is_valid(kTrace));
  CHECK(is_valid(SpanId{0, 0, 0, 0, 0, 0, 0, 1}));
}

TEST_CASE("traceparent_from_headers finds the header in a NATS block", "[trace_context]") {
  const std::string value = header("00", kTraceHex, kSpanHex, "01");
  SECTION("any case of the name, blanks around the value") {
    const std::string block = "NATS/1.0\r\nX-Other: 1\r\nTraceParent: \t" + value + " \r\n\r\n";
    const auto found = traceparent_from_headers(block);
    REQUIRE(found.has_value());
    CHECK(found->trace_id == kTrace);
    CHECK(found->span_id == kSpan);
  }
  SECTION("the first of two") {
    const std::string other = header("00", kTraceHex, "1111111111111111", "00");
    const std::string block = "NATS/1.0\r\ntraceparent: " + other + "\r\ntraceparent: " + value + "\r\n\r\n";
    const auto found = traceparent_from_headers(block);
    REQUIRE(found.has_value());
    CHECK(to_hex(found->span_id) == "1111111111111111");
  }
  SECTION("none, or not valid") {
    CHECK_FALSE(traceparent_from_headers("").has_value());
    CHECK_FALSE(traceparent_from_headers("NATS/1.0\r\nX-Trace: " + value + "\r\n\r\n").has_value());
    CHECK_FALSE(traceparent_from_headers("NATS/1.0\r\ntraceparent: 00-nonsense\r\n\r\n").has_value());
    // after the block's end, nothing is read
    CHECK_FALSE(traceparent_from_headers("NATS/1.0\r\n\r\ntraceparent: " + value + "\r\n").has_value());
  }
}

TEST_CASE("sampled_by_ratio: the ends, the threshold, NaN", "[trace_context]") {
  IdSource ids(1);
  for (int i = 0; i < 1000; ++i) {
    const TraceId id = ids.next_trace_id();
    CHECK(sampled_by_ratio(id, 1.0));
    CHECK(sampled_by_ratio(id, 2.0));
    CHECK_FALSE(sampled_by_ratio(id, 0.0));
    CHECK_FALSE(sampled_by_ratio(id, -0.5));
    CHECK_FALSE(sampled_by_ratio(id, std::numeric_limits<double>::quiet_NaN()));
  }
  // Ratio 0.5: the threshold is 2^62 on the 63-bit value, so the low half's top bit decides.
  CHECK(sampled_by_ratio(with_low_bits(0), 0.5));
  CHECK(sampled_by_ratio(with_low_bits(0x7fff'ffff'ffff'ffffULL), 0.5));
  CHECK_FALSE(sampled_by_ratio(with_low_bits(0x8000'0000'0000'0000ULL), 0.5));
  CHECK_FALSE(sampled_by_ratio(with_low_bits(0xffff'ffff'ffff'ffffULL), 0.5));
  // The high 8 bytes play no part.
  TraceId high_differs = with_low_bits(0x8000'0000'0000'0000ULL);
  high_differs[0] = 0xff;
  CHECK_FALSE(sampled_by_ratio(high_differs, 0.5));
  // The smallest value is kept at any ratio above 0.
  CHECK(sampled_by_ratio(with_low_bits(0), 1e-12));
  CHECK(sampled_by_ratio(with_low_bits(1), 1e-12));  // shifted away: still 0
  CHECK_FALSE(sampled_by_ratio(with_low_bits(0xffff'ffff'ffff'fffeULL), 0.999999));
}

TEST_CASE("sampled_by_ratio keeps about ratio * N, the same ones each time, nested", "[trace_context]") {
  constexpr int kIds = 20000;
  for (const double ratio : {0.01, 0.1, 0.25, 0.5, 0.9}) {
    CAPTURE(ratio);
    IdSource ids(42);
    IdSource again(42);
    int kept = 0;
    for (int i = 0; i < kIds; ++i) {
      const TraceId id = ids.next_trace_id();
      REQUIRE(again.next_trace_id() == id);
      const bool sampled = sampled_by_ratio(id, ratio);
      CHECK(sampled == sampled_by_ratio(id, ratio));  // deterministic
      // A trace kept at one ratio is kept at every higher one: the property that lets services
      // that sample at different ratios keep whole traces.
      if (sampled) CHECK(sampled_by_ratio(id, std::min(1.0, ratio * 1.5)));
      if (sampled) ++kept;
    }
    // Binomial: 5 standard deviations, plus a little for the smallest ratio.
    const double expected = ratio * kIds;
    const double slack = 5 * std::sqrt(kIds * ratio * (1 - ratio)) + 5;
    CHECK(kept > expected - slack);
    CHECK(kept < expected + slack);
  }
}

TEST_CASE("IdSource: seeded, never zero, distinct", "[trace_context]") {
  IdSource a(0);
  IdSource b(0);
  IdSource c(1);
  std::set<TraceId> traces;
  std::set<SpanId> spans;
  for (int i = 0; i < 5000; ++i) {
    const TraceId trace = a.next_trace_id();
    const SpanId span = a.next_span_id();
    CHECK(trace == b.next_trace_id());
    CHECK(span == b.next_span_id());
    CHECK(is_valid(trace));
    CHECK(is_valid(span));
    traces.insert(trace);
    spans.insert(span);
  }
  CHECK(traces.size() == 5000);
  CHECK(spans.size() == 5000);
  CHECK(c.next_trace_id() != IdSource(0).next_trace_id());
}
