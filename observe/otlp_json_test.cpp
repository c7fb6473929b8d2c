#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <vector>

#include "otlp_json.hpp"

using namespace jetfan;
using Json = nlohmann::json;

namespace {

Resource example_resource() {
  Resource resource;
  resource.service_name = "jetfan";
  resource.service_version = "1.2.3";
  resource.service_instance_id = "node1-builder";
  resource.attributes.push_back({"deployment.environment", std::string("test")});
  resource.attributes.push_back({"jetfan.module", std::int64_t{7}});
  return resource;
}

SpanRecord root_span() {
  IdSource ids(3);
  SpanRecord span;
  span.trace_id = ids.next_trace_id();
  span.span_id = ids.next_span_id();
  span.name = "receive orders.created";
  span.kind = SpanKind::kConsumer;
  span.start_unix_nanos = 1'700'000'000'123'456'789ULL;
  span.end_unix_nanos = 18'446'744'073'709'551'615ULL;  // the largest: beyond a double's 2^53
  span.attributes = {
      {"messaging.system", "nats"},  // a literal: a string, not a bool
      {"messaging.message.id", std::int64_t{-9'007'199'254'740'993LL}},
      {"jetfan.redelivered", true},
      {"jetfan.latency_ms", 1.5},
  };
  return span;
}

// The one span list of the one scope of the one resource.
const Json& only_spans(const Json& body) {
  REQUIRE(body.at("resourceSpans").size() == 1);
  const Json& scope_spans = body.at("resourceSpans")[0].at("scopeSpans");
  REQUIRE(scope_spans.size() == 1);
  return scope_spans[0].at("spans");
}

const Json& attribute(const Json& list, const std::string& key) {
  for (const auto& entry : list) {
    if (entry.at("key") == key) return entry.at("value");
  }
  FAIL("no attribute " << key << " in " << list.dump());
  static const Json none;
  return none;
}

bool is_lower_hex(const std::string& text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

}  // namespace

TEST_CASE("otlp_traces_json: the request's shape, resource and scope", "[otlp_json]") {
  const std::vector<SpanRecord> spans{root_span()};
  const Json body = Json::parse(otlp_traces_json(spans, example_resource()));
  REQUIRE(body.is_object());
  CHECK(body.size() == 1);
  const Json& resource_spans = body.at("resourceSpans");
  REQUIRE(resource_spans.is_array());
  REQUIRE(resource_spans.size() == 1);

  const Json& attributes = resource_spans[0].at("resource").at("attributes");
  REQUIRE(attributes.size() == 5);
  CHECK(attributes[0] == Json{{"key", "service.name"}, {"value", {{"stringValue", "jetfan"}}}});
  CHECK(attributes[1] == Json{{"key", "service.version"}, {"value", {{"stringValue", "1.2.3"}}}});
  CHECK(attributes[2] == Json{{"key", "service.instance.id"}, {"value", {{"stringValue", "node1-builder"}}}});
  CHECK(attributes[3] == Json{{"key", "deployment.environment"}, {"value", {{"stringValue", "test"}}}});
  CHECK(attributes[4] == Json{{"key", "jetfan.module"}, {"value", {{"intValue", "7"}}}});

  const Json& scope = resource_spans[0].at("scopeSpans")[0].at("scope");
  CHECK(scope == Json{{"name", "jetfan"}, {"version", "1.2.3"}});
  CHECK(only_spans(body).size() == 1);
}

TEST_CASE("otlp_traces_json: a span, field by field", "[otlp_json]") {
  const SpanRecord record = root_span();
  const Json body = Json::parse(otlp_traces_json(std::vector<SpanRecord>{record}, example_resource()));
  const Json& span = only_spans(body)[0];

  const std::string trace_id = span.at("traceId");
  const std::string span_id = span.at("spanId");
  CHECK(trace_id.size() == 32);
  CHECK(span_id.size() == 16);
  CHECK(is_lower_hex(trace_id));
  CHECK(is_lower_hex(span_id));
  CHECK(trace_id == to_hex(record.trace_id));
  CHECK(span_id == to_hex(record.span_id));
  CHECK_FALSE(span.contains("parentSpanId"));  // a root
  CHECK(span.at("name") == "receive orders.created");
  CHECK(span.at("kind") == 5);
  REQUIRE(span.at("startTimeUnixNano").is_string());
  CHECK(span.at("startTimeUnixNano") == "1700000000123456789");
  CHECK(span.at("endTimeUnixNano") == "18446744073709551615");
  CHECK(span.at("status") == Json::object());  // unset: code 0, left out

  const Json& attributes = span.at("attributes");
  REQUIRE(attributes.size() == 4);
  CHECK(attribute(attributes, "messaging.system") == Json{{"stringValue", "nats"}});
  CHECK(attribute(attributes, "messaging.message.id") == Json{{"intValue", "-9007199254740993"}});
  CHECK(attribute(attributes, "jetfan.redelivered") == Json{{"boolValue", true}});
  const Json& latency = attribute(attributes, "jetfan.latency_ms");
  REQUIRE(latency.at("doubleValue").is_number_float());
  CHECK(latency.at("doubleValue").get<double>() == 1.5);
}

TEST_CASE("otlp_traces_json: parents, kinds, status", "[otlp_json]") {
  IdSource ids(9);
  const TraceId trace = ids.next_trace_id();
  const SpanId parent = ids.next_span_id();
  std::vector<SpanRecord> spans;
  const SpanKind kinds[] = {SpanKind::kInternal, SpanKind::kServer, SpanKind::kClient, SpanKind::kProducer,
                            SpanKind::kConsumer};
  for (const SpanKind kind : kinds) {
    SpanRecord span;
    span.trace_id = trace;
    span.span_id = ids.next_span_id();
    span.parent_span_id = parent;
    span.name = "child";
    span.kind = kind;
    spans.push_back(span);
  }
  spans[1].status_code = SpanStatusCode::kOk;
  spans[2].status_code = SpanStatusCode::kError;
  spans[2].status_message = "handler builder: TERM";

  const Json body = Json::parse(otlp_traces_json(spans, Resource{}));
  const Json& list = only_spans(body);
  REQUIRE(list.size() == 5);
  for (std::size_t i = 0; i < list.size(); ++i) {
    CAPTURE(i);
    CHECK(list[i].at("kind") == static_cast<int>(kinds[i]));
    CHECK(list[i].at("parentSpanId") == to_hex(parent));
    CHECK(list[i].at("traceId") == to_hex(trace));
    CHECK(list[i].at("spanId") == to_hex(spans[i].span_id));  // in order
    CHECK_FALSE(list[i].contains("attributes"));
  }
  CHECK(list[0].at("kind") == 1);
  CHECK(list[4].at("kind") == 5);
  CHECK(list[0].at("status") == Json::object());
  CHECK(list[1].at("status") == Json{{"code", 1}});
  CHECK(list[2].at("status") == Json{{"code", 2}, {"message", "handler builder: TERM"}});
  // An empty resource has no attributes, and the scope no version.
  CHECK(body.at("resourceSpans")[0].at("resource").at("attributes") == Json::array());
  CHECK(body.at("resourceSpans")[0].at("scopeSpans")[0].at("scope") == Json{{"name", "jetfan"}});
}

TEST_CASE("otlp_traces_json: doubles that JSON has no number for, bytes that are not UTF-8", "[otlp_json]") {
  SpanRecord span = root_span();
  span.name = std::string("subject.\xff\xfe.end");
  span.attributes = {
      {"nan", std::numeric_limits<double>::quiet_NaN()},
      {"inf", std::numeric_limits<double>::infinity()},
      {"minus_inf", -std::numeric_limits<double>::infinity()},
      {"bad", std::string("a\xc3")},
  };
  std::string text;
  REQUIRE_NOTHROW(text = otlp_traces_json(std::vector<SpanRecord>{span}, example_resource()));
  const Json body = Json::parse(text);  // valid UTF-8, or this throws
  const Json& out = only_spans(body)[0];
  CHECK(out.at("name") == "subject.\xef\xbf\xbd\xef\xbf\xbd.end");  // each bad byte one U+FFFD
  CHECK(attribute(out.at("attributes"), "nan") == Json{{"doubleValue", "NaN"}});
  CHECK(attribute(out.at("attributes"), "inf") == Json{{"doubleValue", "Infinity"}});
  CHECK(attribute(out.at("attributes"), "minus_inf") == Json{{"doubleValue", "-Infinity"}});
  CHECK(attribute(out.at("attributes"), "bad") == Json{{"stringValue", "a\xef\xbf\xbd"}});
}

TEST_CASE("otlp_traces_json: no spans", "[otlp_json]") {
  const Json body = Json::parse(otlp_traces_json({}, example_resource()));
  CHECK(only_spans(body) == Json::array());
}

TEST_CASE("otlp_traces_json: what needs escaping is escaped, and every string and number reads back as it was",
          "[otlp_json]") {
  SpanRecord span = root_span();
  span.name = "process \"quoted\" back\\slash tab\there";
  span.status_code = SpanStatusCode::kError;
  span.status_message = "line\r\nbreak, caf\xc3\xa9, \xe2\x82\xac, \x01";
  const std::vector<double> doubles = {0.0, -0.0, 0.1, 1e-7, 123456.789, 1e300, -2.5, 5e-324};
  for (std::size_t i = 0; i < doubles.size(); ++i) span.attributes.push_back({"d" + std::to_string(i), doubles[i]});
  span.attributes.push_back({"key \"with\" quotes", std::string("value\\")});
  span.attributes.push_back({"max", std::numeric_limits<std::int64_t>::max()});
  span.attributes.push_back({"min", std::numeric_limits<std::int64_t>::min()});
  span.attributes.push_back({"no", false});
  const Json body = Json::parse(otlp_traces_json(std::vector<SpanRecord>{span}, example_resource()));
  const Json& out = only_spans(body)[0];
  CHECK(out.at("name") == span.name);
  CHECK(out.at("status") == Json{{"code", 2}, {"message", span.status_message}});
  const Json& attributes = out.at("attributes");
  for (std::size_t i = 0; i < doubles.size(); ++i) {
    CHECK(attribute(attributes, "d" + std::to_string(i)).at("doubleValue").get<double>() == doubles[i]);
  }
  CHECK(attribute(attributes, "key \"with\" quotes") == Json{{"stringValue", "value\\"}});
  CHECK(attribute(attributes, "max") == Json{{"intValue", "9223372036854775807"}});
  CHECK(attribute(attributes, "min") == Json{{"intValue", "-9223372036854775808"}});
  CHECK(attribute(attributes, "no") == Json{{"boolValue", false}});
}
