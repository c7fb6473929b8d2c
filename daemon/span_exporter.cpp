#include "span_exporter.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <charconv>
#include <optional>
#include <span>
#include <utility>

namespace jetfan {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using Tcp = asio::ip::tcp;

namespace {

constexpr std::size_t kMaxResponseHeaderBytes = 16 * 1024;
constexpr std::size_t kMaxResponseBodyBytes = 64 * 1024;  // a partial-success answer, an error's text
constexpr std::size_t kErrorBodyExcerpt = 200;

bool starts_with_ignoring_case(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    const char c = text[i];
    const char lower = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    if (lower != prefix[i]) return false;
  }
  return true;
}

// One POST. Shared by the handlers of its operations, so that an exchange given up at its deadline
// may complete (aborted) later, on the next run of the io_context, without touching anything freed.
struct Exchange {
  explicit Exchange(asio::io_context& io) : resolver(io), socket(io) {}

  void finish(std::string why) {
    if (!outcome) outcome = std::move(why);
  }
  void abandon() {
    abandoned = true;
    resolver.cancel();
    boost::system::error_code ignored;
    socket.close(ignored);
  }

  Tcp::resolver resolver;
  Tcp::socket socket;
  std::vector<Tcp::endpoint> addresses;
  http::request<http::string_body> request;
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> response;
  std::optional<std::string> outcome;  // "" for a 2xx answer
  bool abandoned = false;
};

// What of an error answer's body goes into last_error: a collector's 400 names what it refused.
std::string body_excerpt(std::string_view body) {
  std::string out(body.substr(0, kErrorBodyExcerpt));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';  // one line in the log
  }
  return out;
}

void read_answer(const std::shared_ptr<Exchange>& exchange) {
  exchange->response.header_limit(kMaxResponseHeaderBytes);
  exchange->response.body_limit(kMaxResponseBodyBytes);
  // The whole answer is read, not only its status: closing a socket with bytes unread would send
  // the collector a reset, and an error's body says why.
  http::async_read(exchange->socket, exchange->buffer, exchange->response,
                   [exchange](beast::error_code error, std::size_t) {
                     if (exchange->abandoned) return;
                     const auto& parser = exchange->response;
                     // A body past the limit still leaves a status to judge by.
                     if (error && !(error == http::error::body_limit && parser.is_header_done())) {
                       return exchange->finish("read: " + error.message());
                     }
                     const auto& answer = parser.get();
                     const unsigned status = answer.result_int();
                     if (status >= 200 && status < 300) return exchange->finish("");
                     std::string why = "HTTP " + std::to_string(status) + " " + std::string(answer.reason());
                     const std::string excerpt = body_excerpt(answer.body());
                     if (!excerpt.empty()) why += ": " + excerpt;
                     exchange->finish(std::move(why));
                   });
}

void send_request(const std::shared_ptr<Exchange>& exchange) {
  http::async_write(exchange->socket, exchange->request, [exchange](beast::error_code error, std::size_t) {
    if (exchange->abandoned) return;
    if (error) return exchange->finish("write: " + error.message());
    read_answer(exchange);
  });
}

// Tries each address in turn, as a name may have several (IPv6 and IPv4, say).
void connect_to(const std::shared_ptr<Exchange>& exchange) {
  asio::async_connect(exchange->socket, exchange->addresses,
                      [exchange](boost::system::error_code error, const Tcp::endpoint&) {
                        if (exchange->abandoned) return;
                        if (error) return exchange->finish("connect: " + error.message());
                        send_request(exchange);
                      });
}

}  // namespace

std::variant<HttpEndpoint, std::string> parse_http_endpoint(std::string_view url) {
  const std::string quoted = "\"" + std::string(url) + "\"";
  if (starts_with_ignoring_case(url, "https://")) {
    return "otlp endpoint " + quoted + ": https is not supported (jetfan sends OTLP without TLS); use http:// to a " +
           "collector on this host or a trusted network";
  }
  if (!starts_with_ignoring_case(url, "http://")) return "otlp endpoint " + quoted + ": must start with http://";
  std::string_view rest = url.substr(7);
  const std::size_t authority_end = rest.find_first_of("/?#");
  const std::string_view authority = rest.substr(0, authority_end);
  std::string_view target = authority_end == std::string_view::npos ? std::string_view() : rest.substr(authority_end);
  if (authority.find('@') != std::string_view::npos) {
    return "otlp endpoint " + quoted + ": user info (user@host) is not supported";
  }
  if (target.find('#') != std::string_view::npos)
    return "otlp endpoint " + quoted + ": a fragment (#) has no place in it";

  HttpEndpoint endpoint;
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {  // an IPv6 literal: [::1]:4318
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) return "otlp endpoint " + quoted + ": an unclosed '[' in the host";
    endpoint.host = std::string(authority.substr(1, close - 1));
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty() && after.front() != ':') return "otlp endpoint " + quoted + ": junk after the host";
    if (!after.empty()) port_text = after.substr(1);
  } else {
    const std::size_t colon = authority.rfind(':');
    endpoint.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port_text = authority.substr(colon + 1);
  }
  if (endpoint.host.empty()) return "otlp endpoint " + quoted + ": no host";
  if (authority.find_first_of(" \t\r\n") != std::string_view::npos)
    return "otlp endpoint " + quoted + ": a blank in the host";
  if (!port_text.empty() || authority.back() == ':') {
    unsigned port = 0;
    const auto [end, error] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (port_text.empty() || error != std::errc() || end != port_text.data() + port_text.size() || port == 0 ||
        port > 65535) {
      return "otlp endpoint " + quoted + ": the port must be a number from 1 to 65535";
    }
    endpoint.port = static_cast<std::uint16_t>(port);
  }
  if (target.find_first_of(" \t\r\n") != std::string_view::npos)
    return "otlp endpoint " + quoted + ": a blank in the path";
  // No path at all is taken for a collector's base URL, as OTEL_EXPORTER_OTLP_ENDPOINT is; a path
  // given, even "/", is the caller's and is kept.
  if (target.empty()) {
    endpoint.target = "/v1/traces";
  } else if (target.front() == '?') {
    endpoint.target = "/v1/traces" + std::string(target);
  } else {
    endpoint.target = std::string(target);
  }
  endpoint.host_header = std::string(authority);
  return endpoint;
}

std::variant<std::unique_ptr<SpanExporter>, std::string> make_span_exporter(SpanExporterSettings settings) {
  auto parsed = parse_http_endpoint(settings.endpoint);
  if (auto* error = std::get_if<std::string>(&parsed)) return std::move(*error);
  if (settings.max_queued < 1) return std::string("otlp: max_queued must be at least 1");
  if (settings.max_batch < 1) return std::string("otlp: max_batch must be at least 1");
  if (settings.interval.count() <= 0) return std::string("otlp: the interval must be positive");
  if (settings.request_timeout.count() <= 0) return std::string("otlp: the request timeout must be positive");
  if (settings.stop_timeout.count() < 0) return std::string("otlp: the stop timeout must not be negative");
  return std::make_unique<SpanExporter>(std::get<HttpEndpoint>(std::move(parsed)), std::move(settings));
}

SpanExporter::SpanExporter(HttpEndpoint endpoint, SpanExporterSettings settings)
    : endpoint_(std::move(endpoint)), settings_(std::move(settings)) {
  // Both reserved now, so that offer() never allocates: the two only ever trade places.
  queue_.reserve(settings_.max_queued);
  spare_.reserve(settings_.max_queued);
  worker_ = std::thread([this] { run(); });
}

SpanExporter::~SpanExporter() { stop(); }

bool SpanExporter::offer(SpanRecord&& span) {
  offered_.fetch_add(1, std::memory_order_relaxed);
  std::unique_lock lock(mutex_);
  if (stopping_) {
    lock.unlock();
    dropped_after_stop_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  if (queue_.size() >= settings_.max_queued) {
    lock.unlock();
    dropped_queue_full_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  queue_.push_back(std::move(span));
  // Woken once per full batch, not per span: a notify with nobody waiting is cheap, but not free.
  const bool batch_full = queue_.size() == settings_.max_batch;
  lock.unlock();
  if (batch_full) wake_.notify_one();
  return true;
}

void SpanExporter::stop() {
  {
    std::lock_guard lock(mutex_);
    if (!stopping_) {
      stopping_ = true;
      stop_deadline_.store((Clock::now() + settings_.stop_timeout).time_since_epoch().count());
    }
  }
  wake_.notify_one();
  // A POST in progress waits in the io_context; this wakes it to see the stop deadline.
  asio::post(io_, [] {});
  if (worker_.joinable()) worker_.join();
}

SpanExporterCounters SpanExporter::counters() const {
  SpanExporterCounters c;
  c.offered = offered_.load(std::memory_order_relaxed);
  c.exported = exported_.load(std::memory_order_relaxed);
  c.dropped_queue_full = dropped_queue_full_.load(std::memory_order_relaxed);
  c.dropped_after_stop = dropped_after_stop_.load(std::memory_order_relaxed);
  c.dropped_export_failed = dropped_export_failed_.load(std::memory_order_relaxed);
  c.export_requests = export_requests_.load(std::memory_order_relaxed);
  c.failed_requests = failed_requests_.load(std::memory_order_relaxed);
  return c;
}

std::string SpanExporter::last_error() const {
  std::lock_guard lock(mutex_);
  return last_error_;
}

SpanExporter::Clock::time_point SpanExporter::stop_deadline() const {
  return Clock::time_point(Clock::duration(stop_deadline_.load()));
}

void SpanExporter::record_failure(std::size_t spans, std::string why) {
  dropped_export_failed_.fetch_add(spans, std::memory_order_relaxed);
  std::lock_guard lock(mutex_);
  last_error_ = std::move(why);
}

void SpanExporter::run() {
  auto next_look = Clock::now() + settings_.interval;
  for (;;) {
    bool stopping = false;
    {
      std::unique_lock lock(mutex_);
      wake_.wait_until(lock, next_look, [this] { return stopping_ || queue_.size() >= settings_.max_batch; });
      stopping = stopping_;
      queue_.swap(spare_);  // spare_ is empty, with the same capacity
    }
    next_look = Clock::now() + settings_.interval;
    export_taken(spare_);
    spare_.clear();
    // offer() refuses once stopping_ is set, so what was taken after it was set is all there was.
    if (stopping) return;
  }
}

void SpanExporter::export_taken(std::vector<SpanRecord>& taken) {
  for (std::size_t from = 0; from < taken.size(); from += settings_.max_batch) {
    const std::size_t count = std::min(settings_.max_batch, taken.size() - from);
    const auto now = Clock::now();
    if (now >= stop_deadline()) {
      // What stop() had no time for is counted once, as a whole, and the worker ends.
      record_failure(taken.size() - from, "stopped before " + std::to_string(taken.size() - from) +
                                              " spans could be sent (stop timeout " +
                                              std::to_string(settings_.stop_timeout.count()) + " ms)");
      return;
    }
    std::string body = otlp_traces_json(std::span<const SpanRecord>(taken).subspan(from, count), settings_.resource);
    export_requests_.fetch_add(1, std::memory_order_relaxed);
    std::string failure = post(std::move(body), now + settings_.request_timeout);
    if (failure.empty()) {
      exported_.fetch_add(count, std::memory_order_relaxed);
    } else {
      failed_requests_.fetch_add(1, std::memory_order_relaxed);
      record_failure(count, std::move(failure));
    }
  }
}

std::string SpanExporter::post(std::string body, Clock::time_point deadline) {
  auto exchange = std::make_shared<Exchange>(io_);
  auto& request = exchange->request;
  request.method(http::verb::post);
  request.target(endpoint_.target);
  request.version(11);
  request.set(http::field::host, endpoint_.host_header);
  request.set(http::field::user_agent, "jetfan");
  request.set(http::field::content_type, "application/json");
  request.keep_alive(false);
  request.body() = std::move(body);
  request.prepare_payload();

  // An address needs no lookup; a name is looked up for each POST, so that a collector that moves
  // (a container restarted) is found again.
  boost::system::error_code not_an_address;
  const auto address = asio::ip::make_address(endpoint_.host, not_an_address);
  if (!not_an_address) {
    exchange->addresses.emplace_back(address, endpoint_.port);
    connect_to(exchange);
  } else {
    exchange->resolver.async_resolve(
        endpoint_.host, std::to_string(endpoint_.port),
        [exchange](boost::system::error_code error, const Tcp::resolver::results_type& found) {
          if (exchange->abandoned) return;
          if (error) return exchange->finish("resolve: " + error.message());
          for (const auto& entry : found) exchange->addresses.push_back(entry.endpoint());
          connect_to(exchange);
        });
  }

  // The io_context runs only here, one handler at a time, so that the deadline (this request's, or
  // stop()'s if that comes first) is looked at again after each, and a stop() wakes it by a post.
  io_.restart();
  while (!exchange->outcome) {
    const auto limit = std::min(deadline, stop_deadline());
    if (Clock::now() >= limit) {
      exchange->abandon();
      // Handlers of what was just cancelled run now, but a name lookup cannot be interrupted:
      // getaddrinfo's thread may finish later, and its handler then runs on the next POST's turn.
      io_.restart();
      io_.poll();
      const bool stopped = limit < deadline;
      return stopped ? "stopped while sending (stop timeout " + std::to_string(settings_.stop_timeout.count()) + " ms)"
                     : "timed out after " + std::to_string(settings_.request_timeout.count()) + " ms";
    }
    if (io_.run_one_until(limit) == 0 && io_.stopped()) io_.restart();
  }
  return *exchange->outcome;
}

}  // namespace jetfan
