#include "otlp_json.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>

namespace jetfan {

namespace {

// Written straight into one string: a DOM per span (nlohmann's objects, a map per object) cost the
// exporter some 135,000 instructions a span, and at full sampling it fell behind the dispatcher.
// What needs escaping, or may not be UTF-8, still goes through nlohmann's serializer.
class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}

  // `text` as a JSON string. Printable ASCII without '"' or '\\' (keys, ids, most subjects and
  // handler names) is copied as it is.
  void string(std::string_view text) {
    const bool plain =
        std::all_of(text.begin(), text.end(), [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; });
    if (plain) {
      out_ += '"';
      out_ += text;
      out_ += '"';
      return;
    }
    // `replace` rather than the default `strict`, which throws on a string that is not UTF-8: one
    // odd subject must cost a character, not the batch (and an exception on the exporter's thread).
    out_ += nlohmann::json(std::string(text)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  // "key": (a key of this file's own, which needs no escaping)
  void key(std::string_view name) {
    out_ += '"';
    out_ += name;
    out_ += "\":";
  }
  template <typename Number>
  void number(Number value) {
    char buffer[32];
    const auto end = std::to_chars(buffer, buffer + sizeof buffer, value).ptr;
    out_.append(buffer, end);
  }
  // OTLP/JSON, like protobuf's mapping, carries 64-bit integers as strings: JSON numbers are doubles
  // to many readers, and would lose the low bits past 2^53.
  template <typename Integer>
  void quoted(Integer value) {
    out_ += '"';
    number(value);
    out_ += '"';
  }
  void raw(std::string_view text) { out_ += text; }

  void value(const AttributeValue& value) {
    raw("{");
    if (const auto* s = std::get_if<std::string>(&value)) {
      key("stringValue");
      string(*s);
    } else if (const auto* i = std::get_if<std::int64_t>(&value)) {
      key("intValue");
      quoted(*i);
    } else if (const auto* b = std::get_if<bool>(&value)) {
      key("boolValue");
      raw(*b ? "true" : "false");
    } else {
      key("doubleValue");
      const double d = std::get<double>(value);
      // JSON has no NaN or infinity: OTLP/JSON writes them as these strings.
      if (std::isnan(d)) {
        raw("\"NaN\"");
      } else if (std::isinf(d)) {
        raw(d > 0 ? "\"Infinity\"" : "\"-Infinity\"");
      } else {
        number(d);  // the shortest form that reads back as the same double
      }
    }
    raw("}");
  }
  void attribute(std::string_view name, const AttributeValue& value) {
    raw("{");
    key("key");
    string(name);
    raw(",");
    key("value");
    this->value(value);
    raw("}");
  }
  void attributes(const std::vector<Attribute>& list) {
    raw("[");
    for (std::size_t i = 0; i < list.size(); ++i) {
      if (i > 0) raw(",");
      attribute(list[i].key, list[i].value);
    }
    raw("]");
  }

 private:
  std::string& out_;
};

void write_resource(Writer& w, const Resource& resource) {
  w.raw("{");
  w.key("attributes");
  w.raw("[");
  bool first = true;
  const auto add = [&](std::string_view name, const AttributeValue& value) {
    if (!first) w.raw(",");
    first = false;
    w.attribute(name, value);
  };
  if (!resource.service_name.empty()) add("service.name", resource.service_name);
  if (!resource.service_version.empty()) add("service.version", resource.service_version);
  if (!resource.service_instance_id.empty()) add("service.instance.id", resource.service_instance_id);
  for (const auto& attribute : resource.attributes) add(attribute.key, attribute.value);
  w.raw("]}");
}

void write_span(Writer& w, const SpanRecord& span) {
  w.raw("{");
  w.key("traceId");
  w.string(to_hex(span.trace_id));
  w.raw(",");
  w.key("spanId");
  w.string(to_hex(span.span_id));
  // Absent rather than "": both mean a root span to a collector, but absent is what protobuf's JSON
  // mapping writes for an empty bytes field.
  if (span.parent_span_id) {
    w.raw(",");
    w.key("parentSpanId");
    w.string(to_hex(*span.parent_span_id));
  }
  w.raw(",");
  w.key("name");
  w.string(span.name);
  w.raw(",");
  w.key("kind");
  w.number(static_cast<int>(span.kind));
  w.raw(",");
  w.key("startTimeUnixNano");
  w.quoted(span.start_unix_nanos);
  w.raw(",");
  w.key("endTimeUnixNano");
  w.quoted(span.end_unix_nanos);
  if (!span.attributes.empty()) {
    w.raw(",");
    w.key("attributes");
    w.attributes(span.attributes);
  }
  w.raw(",");
  w.key("status");
  w.raw("{");
  if (span.status_code != SpanStatusCode::kUnset) {
    w.key("code");
    w.number(static_cast<int>(span.status_code));
  }
  if (!span.status_message.empty()) {
    if (span.status_code != SpanStatusCode::kUnset) w.raw(",");
    w.key("message");
    w.string(span.status_message);
  }
  w.raw("}}");
}

}  // namespace

std::string otlp_traces_json(std::span<const SpanRecord> spans, const Resource& resource) {
  std::string out;
  out.reserve(256 + spans.size() * 640);
  Writer w(out);
  w.raw("{");
  w.key("resourceSpans");
  w.raw("[{");
  w.key("resource");
  write_resource(w, resource);
  w.raw(",");
  w.key("scopeSpans");
  w.raw("[{");
  w.key("scope");
  w.raw("{");
  w.key("name");
  w.string(kOtlpScopeName);
  if (!resource.service_version.empty()) {
    w.raw(",");
    w.key("version");
    w.string(resource.service_version);
  }
  w.raw("},");
  w.key("spans");
  w.raw("[");
  for (std::size_t i = 0; i < spans.size(); ++i) {
    if (i > 0) w.raw(",");
    write_span(w, spans[i]);
  }
  w.raw("]}]}]}");
  return out;
}

}  // namespace jetfan
