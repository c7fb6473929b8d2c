#include "otlp_json.hpp"

#include <cmath>
#include <nlohmann/json.hpp>

namespace jetfan {

namespace {

using Json = nlohmann::json;

struct AnyValueJson {
  Json operator()(const std::string& value) const { return {{"stringValue", value}}; }
  // OTLP/JSON, like protobuf's mapping, carries int64 as a string: JSON numbers are doubles to many
  // readers, and would lose the low bits past 2^53.
  Json operator()(std::int64_t value) const { return {{"intValue", std::to_string(value)}}; }
  Json operator()(bool value) const { return {{"boolValue", value}}; }
  Json operator()(double value) const {
    // nlohmann writes NaN and infinities as null, which a collector would reject or read as 0.
    if (std::isnan(value)) return {{"doubleValue", "NaN"}};
    if (std::isinf(value)) return {{"doubleValue", value > 0 ? "Infinity" : "-Infinity"}};
    return {{"doubleValue", value}};
  }
};

Json key_value(const std::string& key, const AttributeValue& value) {
  return {{"key", key}, {"value", std::visit(AnyValueJson{}, value)}};
}

Json attribute_list(const std::vector<Attribute>& attributes) {
  Json list = Json::array();
  for (const auto& attribute : attributes) list.push_back(key_value(attribute.key, attribute.value));
  return list;
}

Json resource_json(const Resource& resource) {
  Json list = Json::array();
  const auto add_if_set = [&list](const char* key, const std::string& value) {
    if (!value.empty()) list.push_back(key_value(key, value));
  };
  add_if_set("service.name", resource.service_name);
  add_if_set("service.version", resource.service_version);
  add_if_set("service.instance.id", resource.service_instance_id);
  for (const auto& attribute : resource.attributes) list.push_back(key_value(attribute.key, attribute.value));
  return {{"attributes", std::move(list)}};
}

Json span_json(const SpanRecord& span) {
  Json out = {
      {"traceId", to_hex(span.trace_id)},
      {"spanId", to_hex(span.span_id)},
      {"name", span.name},
      {"kind", static_cast<int>(span.kind)},
      {"startTimeUnixNano", std::to_string(span.start_unix_nanos)},
      {"endTimeUnixNano", std::to_string(span.end_unix_nanos)},
  };
  // Absent rather than "": both mean a root span to a collector, but absent is what protobuf's JSON
  // mapping writes for an empty bytes field.
  if (span.parent_span_id) out["parentSpanId"] = to_hex(*span.parent_span_id);
  if (!span.attributes.empty()) out["attributes"] = attribute_list(span.attributes);
  Json status = Json::object();
  if (span.status_code != SpanStatusCode::kUnset) status["code"] = static_cast<int>(span.status_code);
  if (!span.status_message.empty()) status["message"] = span.status_message;
  out["status"] = std::move(status);
  return out;
}

}  // namespace

std::string otlp_traces_json(std::span<const SpanRecord> spans, const Resource& resource) {
  Json span_list = Json::array();
  for (const auto& span : spans) span_list.push_back(span_json(span));
  Json scope = {{"name", kOtlpScopeName}};
  if (!resource.service_version.empty()) scope["version"] = resource.service_version;
  const Json request = {
      {"resourceSpans",
       Json::array({{
           {"resource", resource_json(resource)},
           {"scopeSpans", Json::array({{{"scope", std::move(scope)}, {"spans", std::move(span_list)}}})},
       }})},
  };
  // `replace` rather than the default `strict`, which throws on a string that is not UTF-8: one odd
  // subject must cost a character, not the batch (and an exception on the exporter's thread).
  return request.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace jetfan
