#pragma once
// SpanExporter: sends finished spans to an OpenTelemetry collector, as OTLP/HTTP with the JSON
// encoding (observe/otlp_json.hpp), in batches, from a thread of its own, and never holds up the
// thread that offers them.
//
//   dispatch thread ── offer(span) ──► queue (at most max_queued) ──► worker thread ── POST ──► collector
//
// - offer() takes the mutex for a push onto a vector reserved at construction: O(1), no allocation,
//   no I/O, no waiting on the network. A full queue (or a stopped exporter) refuses the span and
//   counts it; nothing else ever blocks or fails the caller.
// - The worker wakes when max_batch spans wait, when `interval` has passed since it last looked,
//   and at stop(). It takes everything queued at once (swapping the vector, so the mutex is held
//   for O(1)) and sends it in POSTs of at most max_batch spans each. Memory is bounded by twice
//   max_queued spans: those queued and those the worker is sending.
// - Each POST is one HTTP/1.1 request on a new connection ("Connection: close"; a batch is sent at
//   most every `interval` or per max_batch spans, so a connection's cost is nothing beside the
//   batch, and no stale keep-alive connection can cost one), bounded as a whole (name lookup,
//   connect, write, the answer) by request_timeout. A 2xx status is success; any other
//   status, an error or the timeout drops that batch, counted in dropped_export_failed, with the
//   reason in last_error(). Nothing is retried: spans are worth less than keeping up.
// - stop() (and the destructor) refuses new spans, sends what is queued, and joins. From the call,
//   every request ends within stop_timeout, and what is still unsent then is dropped (counted in
//   dropped_export_failed): stop() returns within about stop_timeout, however slow the collector.
//
// The endpoint is http://host[:port][/path]: port 80 if none is named; a URL without a path posts
// to /v1/traces (OTLP's conventional path), one with a path (even "/") posts to that path as given.
// https is refused: TLS is not in scope, so the factory answers with an error rather than sending
// spans in the clear to what was meant to be a TLS endpoint.
//
// Thread: offer() and the counters from any thread; stop() from the owner's thread (once or more);
// the rest is the worker's. Lifetime: the worker refers to the exporter, which must outlive it:
// the destructor stops and joins.

#include <boost/asio/io_context.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <variant>
#include <vector>

#include "delivery_tracer.hpp"
#include "otlp_json.hpp"

namespace jetfan {

// Where the POSTs go: what parse_http_endpoint makes of the URL.
struct HttpEndpoint {
  std::string host;         // a name or an IP address (an IPv6 one without its brackets)
  std::uint16_t port = 80;  //
  std::string target;       // the request target: the path, and the query if any
  std::string host_header;  // the Host header: host[:port] as the URL spelled it
};

// The endpoint of an http:// URL, or why it is not one jetfan can post to (https, another scheme,
// user info, a bad port, no host).
std::variant<HttpEndpoint, std::string> parse_http_endpoint(std::string_view url);

struct SpanExporterSettings {
  std::string endpoint = "http://127.0.0.1:4318/v1/traces";
  Resource resource;
  // OpenTelemetry's batch span processor's defaults, but for the request timeout and the stop.
  std::size_t max_queued = 2048;                    // spans waiting; more are refused
  std::size_t max_batch = 512;                      // spans per POST
  std::chrono::milliseconds interval{5000};         // the longest a span waits to be sent
  std::chrono::milliseconds request_timeout{5000};  // one POST, all of it
  std::chrono::milliseconds stop_timeout{3000};     // what stop() may spend sending the rest
};

// Counts since construction. offered == exported + dropped_queue_full + dropped_after_stop +
// dropped_export_failed + those queued or being sent; after stop(), none are left in the last.
struct SpanExporterCounters {
  std::uint64_t offered = 0;
  std::uint64_t exported = 0;               // in batches a collector answered 2xx
  std::uint64_t dropped_queue_full = 0;     // refused by offer(): max_queued were waiting
  std::uint64_t dropped_after_stop = 0;     // refused by offer() after stop()
  std::uint64_t dropped_export_failed = 0;  // in batches that failed, timed out, or were left at stop
  std::uint64_t export_requests = 0;        // POSTs attempted
  std::uint64_t failed_requests = 0;        // of those, the ones that failed
};

class SpanExporter {
 public:
  // Starts the worker. Precondition: settings valid (make_span_exporter checks them).
  SpanExporter(HttpEndpoint endpoint, SpanExporterSettings settings);
  ~SpanExporter();
  SpanExporter(const SpanExporter&) = delete;
  SpanExporter& operator=(const SpanExporter&) = delete;

  // Queues `span` for export; false if it was refused (max_queued waiting, or stopped), counted.
  // Any thread; never blocks on the network, never allocates.
  bool offer(SpanRecord&& span);

  // Sends what is queued (within stop_timeout), then joins the worker. Idempotent. Owner's thread.
  void stop();

  SpanExporterCounters counters() const;
  // Why the last failed POST failed ("" if none has); e.g. "HTTP 503 Service Unavailable",
  // "connect: Connection refused", "timed out after 5000 ms" (an error status: with the start of its body).
  std::string last_error() const;
  const HttpEndpoint& endpoint() const { return endpoint_; }

 private:
  using Clock = std::chrono::steady_clock;

  void run();
  void export_taken(std::vector<SpanRecord>& taken);
  // "" on success, else why not. Returns by `deadline`, or sooner if stop()'s deadline is sooner.
  std::string post(std::string body, Clock::time_point deadline);
  Clock::time_point stop_deadline() const;
  void record_failure(std::size_t spans, std::string why);

  const HttpEndpoint endpoint_;
  const SpanExporterSettings settings_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<SpanRecord> queue_;  // guarded by mutex_; capacity max_queued, reserved once
  bool stopping_ = false;          // guarded by mutex_
  std::string last_error_;         // guarded by mutex_

  std::atomic<Clock::rep> stop_deadline_{Clock::time_point::max().time_since_epoch().count()};
  std::atomic<std::uint64_t> offered_{0};
  std::atomic<std::uint64_t> exported_{0};
  std::atomic<std::uint64_t> dropped_queue_full_{0};
  std::atomic<std::uint64_t> dropped_after_stop_{0};
  std::atomic<std::uint64_t> dropped_export_failed_{0};
  std::atomic<std::uint64_t> export_requests_{0};
  std::atomic<std::uint64_t> failed_requests_{0};

  boost::asio::io_context io_;     // the worker's; stop() only posts to it, to wake it
  std::vector<SpanRecord> spare_;  // the worker's: swapped with queue_, so both keep their capacity
  std::thread worker_;             // last: started once everything above exists
};

// The exporter as a DeliveryTracer's sink: what it refuses, it counts.
class SpanExporterSink final : public SpanSink {
 public:
  explicit SpanExporterSink(SpanExporter& exporter) : exporter_(exporter) {}
  void offer(SpanRecord&& span) override { exporter_.offer(std::move(span)); }

 private:
  SpanExporter& exporter_;
};

// Checks the settings and the endpoint (parse_http_endpoint) and starts an exporter; or says what
// is wrong, as a value: "otlp endpoint: https is not supported ...", "max_batch must be at least 1".
std::variant<std::unique_ptr<SpanExporter>, std::string> make_span_exporter(SpanExporterSettings settings);

}  // namespace jetfan
