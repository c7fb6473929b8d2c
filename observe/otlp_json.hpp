#pragma once
// The body of an OTLP/HTTP trace export in its JSON encoding (ExportTraceServiceRequest), which an
// OpenTelemetry collector accepts on POST /v1/traces with Content-Type application/json:
//
//   {"resourceSpans":[{"resource":{"attributes":[...]},
//                      "scopeSpans":[{"scope":{"name":"jetfan","version":...},"spans":[...]}]}]}
//
// OTLP/JSON is protobuf's JSON mapping with its own exceptions, which this follows:
//   - traceId, spanId and parentSpanId are lowercase hex (32 and 16 characters), not base64;
//   - 64-bit integers (startTimeUnixNano, endTimeUnixNano, intValue) are decimal strings;
//   - enums (kind, status.code) are their integers;
//   - a root span has no parentSpanId; fields at their defaults may be left out and are;
//   - a double that is NaN or infinite is the string "NaN", "Infinity" or "-Infinity";
//   - strings that are not valid UTF-8 have each bad byte replaced by U+FFFD (JSON must be UTF-8,
//     and span names and attributes may come from subjects and headers, which need not be).
//
// Pure: no I/O, no clock. Thread: any; nothing shared.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "trace_context.hpp"

namespace jetfan {

// OTLP's Span.SpanKind, as its integers.
enum class SpanKind : int {
  kUnspecified = 0,
  kInternal = 1,
  kServer = 2,
  kClient = 3,
  kProducer = 4,
  kConsumer = 5,
};

// OTLP's Status.StatusCode, as its integers.
enum class SpanStatusCode : int {
  kUnset = 0,
  kOk = 1,
  kError = 2,
};

// An attribute's value: stringValue, intValue, boolValue or doubleValue. (A string literal makes a
// std::string here, not a bool: C++20 forbids that conversion in a variant's converting constructor.)
using AttributeValue = std::variant<std::string, std::int64_t, bool, double>;

struct Attribute {
  std::string key;
  AttributeValue value;
};

// One finished span, as the exporter queues it. Owns all its bytes.
struct SpanRecord {
  TraceId trace_id{};
  SpanId span_id{};
  std::optional<SpanId> parent_span_id;  // none for a root span
  std::string name;
  SpanKind kind = SpanKind::kInternal;
  std::uint64_t start_unix_nanos = 0;
  std::uint64_t end_unix_nanos = 0;
  std::vector<Attribute> attributes;
  SpanStatusCode status_code = SpanStatusCode::kUnset;
  std::string status_message;  // meaningful only with kError
};

// What every span of the process shares (OpenTelemetry's resource semantic conventions). An empty
// string leaves its attribute out; `attributes` follow the three, in their order.
struct Resource {
  std::string service_name;         // service.name
  std::string service_version;      // service.version
  std::string service_instance_id;  // service.instance.id
  std::vector<Attribute> attributes;
};

// The instrumentation scope every span is reported under; its version is the resource's
// service.version (jetfan instruments itself).
inline constexpr const char* kOtlpScopeName = "jetfan";

// The export request for `spans`, all under one resource and one scope, in their order. An empty
// `spans` gives a request with an empty span list (valid, but not worth sending).
std::string otlp_traces_json(std::span<const SpanRecord> spans, const Resource& resource);

}  // namespace jetfan
