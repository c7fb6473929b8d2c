// Tracing (config `tracing:`) with the real jetfan, a real nats-server, real handler processes and a
// collector stand-in (support/OtlpReceiver) that checks the OTLP/JSON shape of every export: the
// spans of a message and of each handler delivery, in the publisher's trace; the traceparent each
// handler gets on its MSG; sampling by traceparent and by sample_ratio, and a reload of it; a
// collector that fails costs spans only, and says so; tracing off shows nowhere. No timing bounds:
// every wait ends on what it waits for.

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <set>
#include <sstream>

#include "control.hpp"
#include "mesh.hpp"
#include "otlp_receiver.hpp"

using namespace jetfan::testing;
using namespace std::chrono_literals;

namespace {

constexpr auto kPatience = 60s;

nlohmann::json status(Mesh& mesh) { return nlohmann::json::parse(control_request(mesh.control_path(), "STATUS JSON")); }

// The top-level `tracing:` section, spliced after the handlers.
std::string tracing_yaml(const OtlpReceiver& collector, const std::string& sample_ratio) {
  return "tracing:\n  endpoint: " + collector.endpoint() + "\n  sample_ratio: " + sample_ratio +
         "\n  service_name: jetfan\n  interval: 200ms\n  request_timeout: 5s\n";
}

// What a test handler started with {"--details", "yes"} wrote per message: its deliveries (MSG's
// count) and the traceparent of its MSG ("-" for none), in the order it got them.
struct GotTraceparent {
  std::uint64_t stream_seq = 0;
  std::uint64_t deliveries = 0;
  std::string traceparent;
};
std::vector<GotTraceparent> traceparents(const Mesh& mesh, const std::string& name) {
  std::vector<GotTraceparent> out;
  std::istringstream lines(read_file(mesh.dir() + "/" + name + "-1.seen.details"));
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    GotTraceparent got;
    std::uint64_t server_deliveries = 0;
    std::string headers;
    words >> got.stream_seq >> got.deliveries >> server_deliveries >> headers >> got.traceparent;
    out.push_back(got);
  }
  return out;
}

std::size_t count_prefixed(const std::vector<ReceivedSpan>& spans, const std::string& prefix) {
  return static_cast<std::size_t>(
      std::count_if(spans.begin(), spans.end(), [&](const ReceivedSpan& s) { return s.name.rfind(prefix, 0) == 0; }));
}

// One line per span, for a failure's message.
std::string describe(const std::vector<ReceivedSpan>& spans) {
  std::string out;
  for (const auto& span : spans) {
    out += span.name + " trace " + span.trace_id + " span " + span.span_id + " parent " +
           (span.parent_span_id.empty() ? "-" : span.parent_span_id) + " status " + std::to_string(span.status_code);
    for (const auto& [key, value] : span.attributes) out += " " + key + "=" + value.dump();
    out += "\n";
  }
  return out;
}

void write_config(const Mesh& mesh, const std::string& text) {
  const std::string path = mesh.dir() + "/jetfan.yaml";
  std::ofstream(path + ".new") << text;
  std::rename((path + ".new").c_str(), path.c_str());
}

void check_no_violations(const OtlpReceiver& collector) {
  for (const auto& violation : collector.violations()) FAIL_CHECK("OTLP shape: " << violation);
  CHECK(collector.violations().empty());
}

}  // namespace

TEST_CASE(
    "tracing: a message with a sampled traceparent gives a process span under it and one deliver span per handler, "
    "and each handler sees its own span as parent",
    "[integration]") {
  OtlpReceiver collector;
  Mesh mesh;
  mesh.start_jetfan(mesh.config("  - name: audit\n    patterns: [\"a.*\"]\n  - name: db\n    patterns: [\"a.*\"]\n",
                                tracing_yaml(collector, "1")));
  mesh.start_handler("audit", {"--details", "yes"});
  mesh.start_handler("db", {"--details", "yes"});
  const std::string trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
  const std::string publisher_span = "00f067aa0ba902b7";
  // audit acks; db naks the first delivery and acks the second. The NAK goes back to the server (a
  // message is settled once, for all its handlers), which delivers the message again: a second
  // course, its own process span, and only db, whose answer is still owed, gets it.
  const std::uint64_t seq = mesh.controller().publish(
      "events.a.x", "nak1@db", {{"traceparent", "00-" + trace_id + "-" + publisher_span + "-01"}});
  REQUIRE(mesh.wait_seen("audit", 1, 1, kPatience));
  REQUIRE(mesh.wait_seen("db", 2, 1, kPatience));
  REQUIRE(mesh.wait_settled(kPatience));
  REQUIRE(collector.wait_for_spans("process events.a.x", 2, kPatience));
  REQUIRE(collector.wait_for_spans("deliver audit", 1, kPatience));
  REQUIRE(collector.wait_for_spans("deliver db", 2, kPatience));
  check_no_violations(collector);
  INFO(describe(collector.spans()));

  const auto processes = collector.spans_named("process events.a.x");
  REQUIRE(processes.size() == 2);
  const bool first_is_0 = processes[0].int_attribute("jetfan.server_deliveries") == 1;
  const ReceivedSpan& course1 = first_is_0 ? processes[0] : processes[1];
  const ReceivedSpan& course2 = first_is_0 ? processes[1] : processes[0];
  for (const auto* process : {&course1, &course2}) {
    CHECK(process->trace_id == trace_id);
    CHECK(process->parent_span_id == publisher_span);
    CHECK(process->kind == 5);  // CONSUMER
    CHECK(process->service_name == "jetfan");
    CHECK(process->int_attribute("jetfan.stream_seq") == static_cast<std::int64_t>(seq));
    CHECK(process->string_attribute("messaging.destination.name") == "events.a.x");
  }
  CHECK(course1.int_attribute("jetfan.server_deliveries") == 1);
  CHECK(course1.int_attribute("jetfan.recipients") == 2);
  CHECK(course1.string_attribute("jetfan.settle") == "nak");
  CHECK(course2.int_attribute("jetfan.server_deliveries") == 2);
  CHECK(course2.int_attribute("jetfan.recipients") == 1);
  CHECK(course2.string_attribute("jetfan.settle") == "ack");

  const auto audit = collector.spans_named("deliver audit");
  const auto db = collector.spans_named("deliver db");
  REQUIRE(audit.size() == 1);
  REQUIRE(db.size() == 2);
  std::set<std::string> ids = {course1.span_id, course2.span_id};
  for (const auto* group : {&audit, &db}) {
    for (const auto& span : *group) {
      INFO(span.name << " attempt " << span.int_attribute("jetfan.attempt").value_or(-1));
      CHECK(span.trace_id == trace_id);
      CHECK(span.kind == 3);  // CLIENT
      CHECK(span.string_attribute("jetfan.handler") == span.name.substr(std::string("deliver ").size()));
      CHECK(span.double_attribute("jetfan.queued_ms").has_value());
      CHECK(span.double_attribute("jetfan.in_handler_ms").has_value());
      ids.insert(span.span_id);
    }
  }
  CHECK(ids.size() == 5);  // every span its own id
  CHECK(audit[0].parent_span_id == course1.span_id);
  CHECK(audit[0].int_attribute("jetfan.attempt") == 1);
  CHECK(audit[0].string_attribute("jetfan.outcome") == "ack");
  CHECK(audit[0].status_code == 0);
  const auto& db_first = db[0].int_attribute("jetfan.attempt") == 1 ? db[0] : db[1];
  const auto& db_second = db[0].int_attribute("jetfan.attempt") == 1 ? db[1] : db[0];
  CHECK(db_first.parent_span_id == course1.span_id);
  CHECK(db_first.int_attribute("jetfan.attempt") == 1);
  CHECK(db_first.string_attribute("jetfan.outcome") == "nak");
  CHECK(db_first.status_code == 2);  // ERROR
  CHECK(db_second.parent_span_id == course2.span_id);
  CHECK(db_second.int_attribute("jetfan.attempt") == 2);
  CHECK(db_second.string_attribute("jetfan.outcome") == "ack");
  CHECK(db_second.status_code == 0);

  // Each MSG carried the traceparent of its own delivery span (protocol version 3: only its MSG has
  // one), not the publisher's.
  const auto audit_got = traceparents(mesh, "audit");
  REQUIRE(audit_got.size() == 1);
  CHECK(audit_got[0].traceparent == "00-" + trace_id + "-" + audit[0].span_id + "-01");
  const auto db_got = traceparents(mesh, "db");
  REQUIRE(db_got.size() == 2);
  for (const auto& got : db_got) {
    INFO("db's delivery " << got.deliveries);
    const auto& span = got.deliveries == 1 ? db_first : db_second;
    CHECK(got.stream_seq == seq);
    CHECK(got.traceparent == "00-" + trace_id + "-" + span.span_id + "-01");
  }
}

TEST_CASE("tracing: at sample_ratio 0 only messages with a sampled traceparent are traced", "[integration]") {
  OtlpReceiver collector;
  Mesh mesh;
  mesh.start_jetfan(mesh.config("  - name: audit\n    patterns: [\"#\"]\n", tracing_yaml(collector, "0")));
  mesh.start_handler("audit", {"--details", "yes"});
  for (int i = 0; i < 20; ++i) mesh.publish("a.plain", std::to_string(i));
  const std::string sampled = "0af7651916cd43dd8448eb211c80319c";
  const std::string unsampled = "5b8aa5a2d2c872e8321cf37308d69df2";
  const std::uint64_t sampled_seq =
      mesh.controller().publish("events.a.sampled", "x", {{"traceparent", "00-" + sampled + "-b7ad6b7169203331-01"}});
  mesh.controller().publish("events.a.unsampled", "x", {{"traceparent", "00-" + unsampled + "-b9c7c989f97918e1-00"}});
  REQUIRE(mesh.wait_seen("audit", 22, 1, kPatience));
  REQUIRE(mesh.wait_settled(kPatience));
  REQUIRE(collector.wait_for_spans("process events.a.sampled", 1, kPatience));
  // Everything made is sent: the one message's course is over, and its spans all exported.
  nlohmann::json tracing;
  REQUIRE(wait_until(
      [&] {
        tracing = status(mesh)["tracing"];
        return tracing["traced_messages"] == 1 && tracing["open_messages"] == 0 && tracing["open_deliveries"] == 0 &&
               tracing["spans"] >= 2 && tracing["exported"] == tracing["spans"];
      },
      kPatience));
  INFO(tracing.dump());
  check_no_violations(collector);
  const auto spans = collector.spans();
  CHECK(spans.size() == tracing["spans"].get<std::size_t>());
  CHECK(count_prefixed(spans, "process ") == 1);
  CHECK(count_prefixed(spans, "deliver ") == 1);
  for (const auto& span : spans) CHECK(span.trace_id == sampled);
  CHECK(tracing["sample_ratio"] == 0);
  CHECK(tracing["dropped_export_failed"] == 0);
  CHECK(tracing["failed_requests"] == 0);
  CHECK(tracing["last_error"].is_null());
  // Only the traced message's MSG carries a traceparent.
  for (const auto& got : traceparents(mesh, "audit")) {
    INFO("stream seq " << got.stream_seq);
    CHECK((got.traceparent != "-") == (got.stream_seq == sampled_seq));
  }
  const auto metrics = parse_metrics(control_request(mesh.control_path(), "METRICS"));
  CHECK(metrics.at("jetfan_traced_messages_total") == 1);
  CHECK(metrics.at("jetfan_trace_spans_total{outcome=\"exported\"}") == tracing["exported"].get<double>());
  CHECK(metrics.at("jetfan_trace_export_requests_total{result=\"failed\"}") == 0);
  CHECK_THAT(control_request(mesh.control_path(), "STATUS"),
             Catch::Contains("\ntracing: to " + collector.endpoint()) ||
                 Catch::StartsWith("tracing: to " + collector.endpoint()));
}

TEST_CASE("tracing: a collector that answers 503 costs spans, not messages, and says so", "[integration]") {
  OtlpReceiver collector(503);
  Mesh mesh;
  mesh.start_jetfan(mesh.config("  - name: audit\n    patterns: [\"#\"]\n", tracing_yaml(collector, "1")));
  mesh.start_handler("audit");
  for (int i = 0; i < 50; ++i) mesh.publish("a.x", std::to_string(i));
  REQUIRE(mesh.wait_seen("audit", 50, 1, kPatience));
  REQUIRE(mesh.wait_settled(kPatience));
  for (const auto& seen : mesh.seen("audit")) CHECK(seen.deliveries == 1);
  REQUIRE(collector.wait_for_requests(1, kPatience));
  nlohmann::json tracing;
  REQUIRE(wait_until(
      [&] {
        tracing = status(mesh)["tracing"];
        return tracing["failed_requests"] >= 1 && tracing["dropped_export_failed"] >= 1;
      },
      kPatience));
  INFO(tracing.dump());
  CHECK(tracing["traced_messages"] == 50);
  CHECK(tracing["exported"] == 0);
  REQUIRE(tracing["last_error"].is_string());
  CHECK_THAT(tracing["last_error"].get<std::string>(), Catch::Contains("503"));
  const auto metrics = parse_metrics(control_request(mesh.control_path(), "METRICS"));
  CHECK(metrics.at("jetfan_trace_spans_total{outcome=\"export_failed\"}") > 0);
  CHECK(metrics.at("jetfan_trace_spans_total{outcome=\"exported\"}") == 0);
  CHECK(metrics.at("jetfan_trace_export_requests_total{result=\"failed\"}") >= 1);
  const auto warned = [&] {
    std::istringstream lines(mesh.jetfan_log());
    for (std::string line; std::getline(lines, line);) {
      if (line.find("tracing:") != std::string::npos && line.find("dropped") != std::string::npos) return true;
    }
    return false;
  };
  CHECK(wait_until(warned, kPatience));
  // What it was sent had the right shape, though it refused it.
  check_no_violations(collector);
}

TEST_CASE("tracing: a reload changes sample_ratio for the next messages", "[integration]") {
  OtlpReceiver collector;
  Mesh mesh;
  const std::string handlers = "  - name: audit\n    patterns: [\"#\"]\n";
  mesh.start_jetfan(mesh.config(handlers, tracing_yaml(collector, "0")));
  mesh.start_handler("audit");
  for (int i = 0; i < 5; ++i) mesh.publish("a.before", std::to_string(i));
  REQUIRE(mesh.wait_seen("audit", 5, 1, kPatience));
  REQUIRE(mesh.wait_settled(kPatience));
  CHECK(status(mesh)["tracing"]["traced_messages"] == 0);

  write_config(mesh, mesh.config(handlers, tracing_yaml(collector, "1")));
  const std::string reply = control_request(mesh.control_path(), "RELOAD");
  INFO(reply);
  REQUIRE_THAT(reply, Catch::StartsWith("OK reloaded "));
  CHECK_THAT(reply, Catch::Contains("tracing.sample_ratio"));
  CHECK(status(mesh)["tracing"]["sample_ratio"] == 1);
  for (int i = 0; i < 5; ++i) mesh.publish("a.after", std::to_string(i));
  REQUIRE(mesh.wait_seen("audit", 10, 1, kPatience));
  REQUIRE(wait_until([&] { return status(mesh)["tracing"]["traced_messages"] == 5; }, kPatience));
  REQUIRE(collector.wait_for_spans("process events.a.after", 5, kPatience));
  check_no_violations(collector);
  CHECK(count_prefixed(collector.spans(), "process ") == 5);
  CHECK(collector.spans_named("process events.a.before").empty());
}

TEST_CASE("tracing: off, it shows nowhere: no tracing in status, no trace metrics, no traceparent on a MSG",
          "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config("  - name: audit\n    patterns: [\"#\"]\n"));
  mesh.start_handler("audit", {"--details", "yes"});
  mesh.controller().publish("events.a.x", "x",
                            {{"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}});
  REQUIRE(mesh.wait_seen("audit", 1, 1, kPatience));
  REQUIRE(mesh.wait_settled(kPatience));
  CHECK(status(mesh)["tracing"].is_null());
  const std::string metrics = control_request(mesh.control_path(), "METRICS");
  CHECK_THAT(metrics, !Catch::Contains("jetfan_trace"));
  CHECK_THAT(control_request(mesh.control_path(), "STATUS"), !Catch::Contains("tracing:"));
  const auto got = traceparents(mesh, "audit");
  REQUIRE(got.size() == 1);
  CHECK(got[0].traceparent == "-");
}
