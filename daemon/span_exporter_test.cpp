#include <catch2/catch.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "span_exporter.hpp"

using namespace jetfan;
using namespace std::chrono_literals;
using Json = nlohmann::json;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using Tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

// Every wait in these tests ends when what it waits for happens; this is only how long to wait
// before calling it a failure.
constexpr auto kPatience = 20s;

// A collector stand-in: Beast on a loopback port of its own, on its own thread, recording each
// request it reads whole, and then answering 200, answering 503, or never answering (holding the
// connection open until it is destroyed).
class Receiver {
 public:
  enum class Mode { kAnswer, kFail, kHang };
  struct Request {
    std::string method;
    std::string target;
    std::string content_type;
    std::string body;
  };

  explicit Receiver(Mode mode = Mode::kAnswer) : acceptor_(io_, Tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
    mode_ = mode;
    accept();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~Receiver() {
    io_.stop();
    thread_.join();
  }
  Receiver(const Receiver&) = delete;
  Receiver& operator=(const Receiver&) = delete;

  std::uint16_t port() const { return acceptor_.local_endpoint().port(); }
  void set_mode(Mode mode) { mode_ = mode; }
  // From kHang: answers the requests held so far with 200, and every later one.
  void answer_all() {
    mode_ = Mode::kAnswer;
    asio::post(io_, [this] {
      for (const auto& session : hung_) answer(session, Mode::kAnswer);
      hung_.clear();
    });
  }

  std::vector<Request> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }
  // Waits until `done` holds of the requests so far; false if it did not within kPatience.
  bool wait_for(const std::function<bool(const std::vector<Request>&)>& done) const {
    std::unique_lock lock(mutex_);
    return arrived_.wait_for(lock, kPatience, [&] { return done(requests_); });
  }

 private:
  struct Session {
    explicit Session(Tcp::socket socket) : stream(std::move(socket)) {}
    beast::tcp_stream stream;
    beast::flat_buffer buffer;
    http::request<http::string_body> request;
    http::response<http::string_body> response;
  };

  void accept() {
    acceptor_.async_accept([this](boost::system::error_code error, Tcp::socket socket) {
      if (error) return;
      auto session = std::make_shared<Session>(std::move(socket));
      http::async_read(session->stream, session->buffer, session->request,
                       [this, session](beast::error_code read_error, std::size_t) {
                         if (!read_error) on_request(session);
                       });
      accept();
    });
  }

  void on_request(const std::shared_ptr<Session>& session) {
    {
      std::lock_guard lock(mutex_);
      const auto& request = session->request;
      requests_.push_back({std::string(request.method_string()), std::string(request.target()),
                           std::string(request[http::field::content_type]), request.body()});
    }
    arrived_.notify_all();
    const Mode mode = mode_;
    if (mode == Mode::kHang) {
      hung_.push_back(session);  // open, unanswered, until the receiver goes
      return;
    }
    answer(session, mode);
  }

  static void answer(const std::shared_ptr<Session>& session, Mode mode) {
    auto& response = session->response;
    response.version(11);
    response.result(mode == Mode::kAnswer ? http::status::ok : http::status::service_unavailable);
    response.set(http::field::content_type, "application/json");
    response.keep_alive(false);
    response.body() = mode == Mode::kAnswer ? "{}" : "{\"message\":\"overloaded\"}\n";
    response.prepare_payload();
    http::async_write(session->stream, response, [session](beast::error_code, std::size_t) {
      beast::error_code ignored;
      session->stream.socket().shutdown(Tcp::socket::shutdown_send, ignored);
    });
  }

  asio::io_context io_;
  Tcp::acceptor acceptor_;
  std::atomic<Mode> mode_{Mode::kAnswer};
  std::vector<std::shared_ptr<Session>> hung_;  // the io thread's
  mutable std::mutex mutex_;
  mutable std::condition_variable arrived_;
  std::vector<Request> requests_;
  std::thread thread_;
};

// Polls `done` until it holds; false if it did not within kPatience.
bool eventually(const std::function<bool()>& done) {
  const auto give_up = Clock::now() + kPatience;
  while (!done()) {
    if (Clock::now() > give_up) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

SpanExporterSettings settings_for(std::uint16_t port) {
  SpanExporterSettings settings;
  settings.endpoint = "http://127.0.0.1:" + std::to_string(port) + "/v1/traces";
  settings.resource.service_name = "jetfan";
  settings.resource.service_instance_id = "test";
  return settings;
}

std::unique_ptr<SpanExporter> make(const SpanExporterSettings& settings) {
  auto made = make_span_exporter(settings);
  if (auto* error = std::get_if<std::string>(&made)) FAIL(*error);
  return std::move(std::get<std::unique_ptr<SpanExporter>>(made));
}

SpanRecord numbered_span(int n) {
  static IdSource ids(11);
  SpanRecord span;
  span.trace_id = ids.next_trace_id();
  span.span_id = ids.next_span_id();
  span.name = "span-" + std::to_string(n);
  span.kind = SpanKind::kConsumer;
  span.start_unix_nanos = 1'000 + n;
  span.end_unix_nanos = 2'000 + n;
  span.attributes.push_back({"n", std::int64_t{n}});
  return span;
}

// The names of the spans in one request body, which must be OTLP/JSON as otlp_json makes it.
std::vector<std::string> span_names(const std::string& body) {
  const Json json = Json::parse(body);
  std::vector<std::string> names;
  for (const auto& span : json.at("resourceSpans").at(0).at("scopeSpans").at(0).at("spans")) {
    names.push_back(span.at("name").get<std::string>());
  }
  return names;
}

std::size_t spans_in(const std::vector<Receiver::Request>& requests) {
  std::size_t total = 0;
  for (const auto& request : requests) total += span_names(request.body).size();
  return total;
}

std::uint16_t closed_port() {
  asio::io_context io;
  Tcp::acceptor acceptor(io, Tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  return acceptor.local_endpoint().port();  // closed when it goes: nothing listens there
}

}  // namespace

TEST_CASE("parse_http_endpoint", "[span_exporter]") {
  struct Good {
    const char* url;
    const char* host;
    std::uint16_t port;
    const char* target;
    const char* host_header;
  };
  const Good good[] = {
      {"http://127.0.0.1:4318/v1/traces", "127.0.0.1", 4318, "/v1/traces", "127.0.0.1:4318"},
      {"http://collector:4318", "collector", 4318, "/v1/traces", "collector:4318"},
      {"HTTP://collector", "collector", 80, "/v1/traces", "collector"},
      {"http://collector/", "collector", 80, "/", "collector"},
      {"http://collector:9000/otlp/v1/traces?tenant=a", "collector", 9000, "/otlp/v1/traces?tenant=a",
       "collector:9000"},
      {"http://[::1]:4318/x", "::1", 4318, "/x", "[::1]:4318"},
      {"http://[::1]", "::1", 80, "/v1/traces", "[::1]"},
  };
  for (const auto& g : good) {
    CAPTURE(g.url);
    const auto parsed = parse_http_endpoint(g.url);
    REQUIRE(std::holds_alternative<HttpEndpoint>(parsed));
    const auto& endpoint = std::get<HttpEndpoint>(parsed);
    CHECK(endpoint.host == g.host);
    CHECK(endpoint.port == g.port);
    CHECK(endpoint.target == g.target);
    CHECK(endpoint.host_header == g.host_header);
  }
  struct Bad {
    const char* url;
    const char* says;
  };
  const Bad bad[] = {
      {"https://collector:4318/v1/traces", "https is not supported"},
      {"HTTPS://collector", "https is not supported"},
      {"grpc://collector:4317", "must start with http://"},
      {"collector:4318", "must start with http://"},
      {"http://", "no host"},
      {"http://:4318/v1/traces", "no host"},
      {"http://collector:0", "port"},
      {"http://collector:65536", "port"},
      {"http://collector:43x8", "port"},
      {"http://collector:", "port"},
      {"http://user:pw@collector", "user info"},
      {"http://[::1/x", "unclosed"},
      {"http://collector/a b", "blank"},
      {"http://collector/a#frag", "fragment"},
  };
  for (const auto& b : bad) {
    CAPTURE(b.url);
    const auto parsed = parse_http_endpoint(b.url);
    REQUIRE(std::holds_alternative<std::string>(parsed));
    CHECK_THAT(std::get<std::string>(parsed), Catch::Contains(b.says));
  }
}

TEST_CASE("make_span_exporter refuses https and settings that cannot work, as values", "[span_exporter]") {
  SpanExporterSettings settings;
  settings.endpoint = "https://collector:4318/v1/traces";
  auto made = make_span_exporter(settings);
  REQUIRE(std::holds_alternative<std::string>(made));
  CHECK_THAT(std::get<std::string>(made), Catch::Contains("https is not supported"));

  settings.endpoint = "http://127.0.0.1:4318";
  settings.max_batch = 0;
  made = make_span_exporter(settings);
  REQUIRE(std::holds_alternative<std::string>(made));
  CHECK_THAT(std::get<std::string>(made), Catch::Contains("max_batch"));

  settings.max_batch = 1;
  settings.max_queued = 0;
  made = make_span_exporter(settings);
  REQUIRE(std::holds_alternative<std::string>(made));
  CHECK_THAT(std::get<std::string>(made), Catch::Contains("max_queued"));
}

TEST_CASE("spans offered arrive as OTLP/JSON POSTs to the endpoint's path", "[span_exporter]") {
  Receiver receiver;
  auto settings = settings_for(receiver.port());
  settings.max_batch = 100;
  settings.interval = 100ms;
  auto exporter = make(settings);
  for (int n = 0; n < 5; ++n) CHECK(exporter->offer(numbered_span(n)));

  REQUIRE(receiver.wait_for([](const auto& requests) { return spans_in(requests) == 5; }));
  REQUIRE(eventually([&] { return exporter->counters().exported == 5; }));
  std::set<std::string> names;
  for (const auto& request : receiver.requests()) {
    CHECK(request.method == "POST");
    CHECK(request.target == "/v1/traces");
    CHECK(request.content_type == "application/json");
    const Json body = Json::parse(request.body);
    const Json& resource = body.at("resourceSpans").at(0).at("resource").at("attributes");
    CHECK(resource.at(0) == Json{{"key", "service.name"}, {"value", {{"stringValue", "jetfan"}}}});
    const Json& span = body.at("resourceSpans").at(0).at("scopeSpans").at(0).at("spans").at(0);
    CHECK(span.at("traceId").get<std::string>().size() == 32);
    CHECK(span.at("kind") == 5);
    for (const auto& name : span_names(request.body)) names.insert(name);
  }
  CHECK(names == std::set<std::string>{"span-0", "span-1", "span-2", "span-3", "span-4"});
  exporter->stop();
  const auto counters = exporter->counters();
  CHECK(counters.offered == 5);
  CHECK(counters.exported == 5);
  CHECK(counters.dropped_queue_full + counters.dropped_export_failed + counters.dropped_after_stop == 0);
  CHECK(counters.failed_requests == 0);
  CHECK(counters.export_requests == receiver.requests().size());
  CHECK(exporter->last_error().empty());
}

TEST_CASE("a host name is looked up, and a path of the caller's kept", "[span_exporter]") {
  Receiver receiver;
  auto settings = settings_for(receiver.port());
  settings.endpoint = "http://localhost:" + std::to_string(receiver.port()) + "/otlp/traces?tenant=t1";
  settings.interval = 50ms;
  auto exporter = make(settings);
  CHECK(exporter->offer(numbered_span(1)));
  REQUIRE(receiver.wait_for([](const auto& requests) { return !requests.empty(); }));
  CHECK(receiver.requests().at(0).target == "/otlp/traces?tenant=t1");
  REQUIRE(eventually([&] { return exporter->counters().exported == 1; }));
}

TEST_CASE("batches hold at most max_batch, and a full one goes before the interval", "[span_exporter]") {
  Receiver receiver(Receiver::Mode::kHang);
  auto settings = settings_for(receiver.port());
  settings.max_batch = 10;
  settings.max_queued = 1000;
  settings.interval = 1h;  // only full batches, and stop(), send anything here
  settings.request_timeout = 60s;
  auto exporter = make(settings);
  for (int n = 0; n < 10; ++n) REQUIRE(exporter->offer(numbered_span(n)));
  // A full batch is sent without waiting for the interval; its answer is held back...
  REQUIRE(receiver.wait_for([](const auto& requests) { return requests.size() == 1; }));
  // ...while 25 more queue up, which the worker then takes at once, and must send in three POSTs.
  for (int n = 10; n < 35; ++n) REQUIRE(exporter->offer(numbered_span(n)));
  receiver.answer_all();
  REQUIRE(receiver.wait_for([](const auto& requests) { return requests.size() == 4; }));
  REQUIRE(eventually([&] { return exporter->counters().exported == 35; }));
  exporter->stop();

  const auto requests = receiver.requests();
  REQUIRE(requests.size() == 4);
  std::vector<std::size_t> sizes;
  std::vector<std::string> names;
  for (const auto& request : requests) {
    const auto batch = span_names(request.body);
    sizes.push_back(batch.size());
    names.insert(names.end(), batch.begin(), batch.end());
  }
  CHECK(sizes == std::vector<std::size_t>{10, 10, 10, 5});
  REQUIRE(names.size() == 35);
  for (int n = 0; n < 35; ++n) CHECK(names[n] == "span-" + std::to_string(n));  // in order
  CHECK(exporter->counters().export_requests == 4);
}

TEST_CASE("a span waits at most about the interval", "[span_exporter]") {
  Receiver receiver;
  auto settings = settings_for(receiver.port());
  settings.max_batch = 1000;  // never full here: only the interval sends
  settings.interval = 200ms;
  auto exporter = make(settings);
  CHECK(exporter->offer(numbered_span(1)));
  REQUIRE(receiver.wait_for([](const auto& requests) { return spans_in(requests) == 1; }));
  CHECK(exporter->offer(numbered_span(2)));
  REQUIRE(receiver.wait_for([](const auto& requests) { return spans_in(requests) == 2; }));
  CHECK(receiver.requests().size() == 2);
}

TEST_CASE("stop() sends what is queued, then refuses", "[span_exporter]") {
  Receiver receiver;
  auto settings = settings_for(receiver.port());
  settings.max_batch = 100;
  settings.interval = 1h;
  auto exporter = make(settings);
  for (int n = 0; n < 7; ++n) CHECK(exporter->offer(numbered_span(n)));
  CHECK(receiver.requests().empty());  // nothing full, no interval yet: nothing sent
  exporter->stop();
  // stop() returned after the answer: no waiting needed.
  CHECK(spans_in(receiver.requests()) == 7);
  CHECK(exporter->counters().exported == 7);
  CHECK_FALSE(exporter->offer(numbered_span(8)));
  CHECK(exporter->counters().dropped_after_stop == 1);
  CHECK(exporter->counters().offered == 8);
  exporter->stop();  // again: nothing happens
  CHECK(exporter->counters().export_requests == 1);
}

TEST_CASE("a collector that never answers: offer() stays quick, drops are counted, stop() is bounded",
          "[span_exporter]") {
  Receiver receiver(Receiver::Mode::kHang);
  auto settings = settings_for(receiver.port());
  settings.max_batch = 4;
  settings.max_queued = 8;
  settings.interval = 50ms;
  settings.request_timeout = 60s;  // far longer than any wait below: the worker is stuck in its POST
  settings.stop_timeout = 300ms;
  auto exporter = make(settings);
  for (int n = 0; n < 4; ++n) CHECK(exporter->offer(numbered_span(n)));
  REQUIRE(receiver.wait_for([](const auto& requests) { return requests.size() == 1; }));

  // The worker waits on the network; the queue fills and then refuses, without waiting on it.
  const auto before = Clock::now();
  int accepted = 0;
  for (int n = 4; n < 15; ++n) accepted += exporter->offer(numbered_span(n)) ? 1 : 0;
  CHECK(Clock::now() - before < 5s);
  CHECK(accepted == 8);
  CHECK(exporter->counters().dropped_queue_full == 3);

  const auto stopping = Clock::now();
  exporter->stop();
  CHECK(Clock::now() - stopping < 10s);  // not the 60 s request timeout
  const auto counters = exporter->counters();
  CHECK(counters.offered == 15);
  CHECK(counters.exported == 0);
  CHECK(counters.dropped_export_failed == 12);  // the 4 being sent, the 8 queued
  CHECK(counters.offered ==
        counters.exported + counters.dropped_queue_full + counters.dropped_export_failed + counters.dropped_after_stop);
  CHECK_THAT(exporter->last_error(), Catch::Contains("stop"));
}

TEST_CASE("a POST that times out drops its batch, and the next one goes through", "[span_exporter]") {
  Receiver receiver(Receiver::Mode::kHang);
  auto settings = settings_for(receiver.port());
  settings.max_batch = 2;
  settings.interval = 50ms;
  settings.request_timeout = 300ms;
  auto exporter = make(settings);
  CHECK(exporter->offer(numbered_span(1)));
  CHECK(exporter->offer(numbered_span(2)));
  REQUIRE(eventually([&] { return exporter->counters().dropped_export_failed == 2; }));
  CHECK(exporter->counters().failed_requests == 1);
  CHECK(exporter->counters().exported == 0);
  CHECK_THAT(exporter->last_error(), Catch::Contains("timed out after 300 ms"));
  CHECK(receiver.requests().size() == 1);  // it did arrive; the answer did not

  receiver.set_mode(Receiver::Mode::kAnswer);
  CHECK(exporter->offer(numbered_span(3)));
  CHECK(exporter->offer(numbered_span(4)));
  REQUIRE(eventually([&] { return exporter->counters().exported == 2; }));
  CHECK(exporter->counters().dropped_export_failed == 2);
  CHECK(exporter->counters().export_requests == 2);
}

TEST_CASE("a collector answering an error status: the batch is dropped, with the status", "[span_exporter]") {
  Receiver receiver(Receiver::Mode::kFail);
  auto settings = settings_for(receiver.port());
  settings.max_batch = 3;
  settings.interval = 50ms;
  auto exporter = make(settings);
  for (int n = 0; n < 3; ++n) CHECK(exporter->offer(numbered_span(n)));
  REQUIRE(eventually([&] { return exporter->counters().dropped_export_failed == 3; }));
  CHECK(exporter->counters().exported == 0);
  CHECK(exporter->last_error() == "HTTP 503 Service Unavailable: {\"message\":\"overloaded\"} ");
}

TEST_CASE("nobody listening: drops are counted, nothing hangs", "[span_exporter]") {
  auto settings = settings_for(closed_port());
  settings.max_batch = 3;
  settings.max_queued = 6;
  settings.interval = 50ms;
  settings.request_timeout = 60s;  // a refused connect ends at once, not at the timeout
  auto exporter = make(settings);
  const auto before = Clock::now();
  for (int n = 0; n < 3; ++n) CHECK(exporter->offer(numbered_span(n)));
  REQUIRE(eventually([&] { return exporter->counters().dropped_export_failed == 3; }));
  CHECK(Clock::now() - before < 10s);
  CHECK_THAT(exporter->last_error(), Catch::Contains("connect"));
  for (int n = 3; n < 5; ++n) CHECK(exporter->offer(numbered_span(n)));
  exporter->stop();
  const auto counters = exporter->counters();
  CHECK(counters.exported == 0);
  CHECK(counters.dropped_export_failed == 5);
  CHECK(counters.offered == 5);
}
