#pragma once
// Test support: an OpenTelemetry collector stand-in for jetfan's tracing (config `tracing:`). An
// HTTP/1.1 server (Boost.Beast) on a free loopback port, on a thread of its own, that takes
// POST /v1/traces (OTLP/HTTP with the JSON encoding), keeps each body and the spans in it, and
// answers 200, or the status set_status() gives (e.g. 503, a collector that is overloaded).
//
// It checks every request it gets against the shape of an OTLP/JSON export (otlp_json.hpp):
// method, target and Content-Type; resourceSpans[].resource.attributes naming service.name;
// scopeSpans[].scope.name "jetfan"; each span's traceId (32 lowercase hex), spanId (16), optional
// parentSpanId (16), name, kind (an integer), startTimeUnixNano and endTimeUnixNano (decimal
// strings, end >= start), attributes ([{key, value: {stringValue | intValue (a decimal string) |
// doubleValue | boolValue}}]) and status ({code}, code absent meaning 0). What does not fit is
// kept in violations(), for a test to check there is none.
//
// Waits end on what arrives (a condition variable), never on a sleep. RAII: the destructor stops
// the server and joins its thread.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace jetfan::testing {

// One span as received, its attributes by key (each the OTLP AnyValue object, e.g. {"intValue":"2"}).
struct ReceivedSpan {
  std::string trace_id;
  std::string span_id;
  std::string parent_span_id;  // empty for a root span
  std::string name;
  int kind = 0;
  std::uint64_t start_unix_nanos = 0;
  std::uint64_t end_unix_nanos = 0;
  std::map<std::string, nlohmann::json> attributes;
  int status_code = 0;
  std::string status_message;
  std::string service_name;  // its resource's service.name

  bool has(const std::string& key) const { return attributes.count(key) != 0; }
  // The attribute's value as a string (stringValue), integer (intValue) or double (doubleValue, or
  // an intValue); nullopt when absent or of another type.
  std::optional<std::string> string_attribute(const std::string& key) const;
  std::optional<std::int64_t> int_attribute(const std::string& key) const;
  std::optional<double> double_attribute(const std::string& key) const;
};

class OtlpReceiver {
 public:
  // Answers every request with `status` until set_status() says otherwise.
  explicit OtlpReceiver(int status = 200);
  ~OtlpReceiver();
  OtlpReceiver(const OtlpReceiver&) = delete;
  OtlpReceiver& operator=(const OtlpReceiver&) = delete;

  std::uint16_t port() const { return port_; }
  // "http://127.0.0.1:<port>/v1/traces", for tracing.endpoint.
  std::string endpoint() const;
  void set_status(int status);

  std::size_t requests() const;
  std::vector<std::string> bodies() const;
  std::vector<ReceivedSpan> spans() const;
  std::vector<ReceivedSpan> spans_named(const std::string& name) const;
  // Every way a request broke the OTLP/JSON shape, one line each; empty when all fit.
  std::vector<std::string> violations() const;

  // Waits until `done` holds of the spans received so far; false if it did not within `timeout`.
  bool wait_for(const std::function<bool(const std::vector<ReceivedSpan>&)>& done,
                std::chrono::milliseconds timeout = std::chrono::seconds(30)) const;
  // Waits until at least `count` spans named `name` have arrived.
  bool wait_for_spans(const std::string& name, std::size_t count,
                      std::chrono::milliseconds timeout = std::chrono::seconds(30)) const;
  // Waits until at least `count` requests have arrived (whatever they were answered).
  bool wait_for_requests(std::size_t count, std::chrono::milliseconds timeout = std::chrono::seconds(30)) const;

 private:
  struct Server;  // Beast and Asio stay in the .cpp

  // Called on the server's thread with each whole request: records it, returns the status to answer.
  int take(const std::string& method, const std::string& target, const std::string& content_type,
           const std::string& body);

  mutable std::mutex mutex_;
  mutable std::condition_variable arrived_;
  int status_ = 200;  // guarded by mutex_
  std::vector<std::string> bodies_;
  std::vector<ReceivedSpan> spans_;
  std::vector<std::string> violations_;

  std::unique_ptr<Server> server_;
  std::uint16_t port_ = 0;
  std::thread thread_;  // last: started once everything above exists
};

}  // namespace jetfan::testing
