#include "otlp_receiver.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <utility>

namespace jetfan::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using Tcp = asio::ip::tcp;
using Json = nlohmann::json;

namespace {

bool lower_hex(const Json& value, std::size_t digits) {
  if (!value.is_string()) return false;
  const auto& text = value.get_ref<const std::string&>();
  return text.size() == digits &&
         std::all_of(text.begin(), text.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// A JSON string holding an unsigned decimal integer (OTLP/JSON's 64-bit integers); nullopt if not.
std::optional<std::uint64_t> decimal(const Json& value) {
  if (!value.is_string()) return std::nullopt;
  const auto& text = value.get_ref<const std::string&>();
  if (text.empty() || text.size() > 20 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  try {
    return std::stoull(text);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

bool signed_decimal(const Json& value) {
  if (!value.is_string()) return false;
  std::string text = value.get<std::string>();
  if (!text.empty() && text[0] == '-') text.erase(0, 1);
  return decimal(Json(text)).has_value();
}

// Why `value` is not an OTLP AnyValue of the four kinds jetfan writes; "" when it is one.
std::string any_value_problem(const Json& value) {
  if (!value.is_object() || value.size() != 1) return "not an object with one field: " + value.dump();
  // An iterator kept by name: a structured binding of *items().begin() would refer into a proxy
  // that is gone by the next line (AddressSanitizer's stack-use-after-scope).
  const auto field = value.begin();
  const std::string kind = field.key();
  const Json& inner = field.value();
  if (kind == "stringValue") return inner.is_string() ? "" : "stringValue not a string";
  if (kind == "intValue") return signed_decimal(inner) ? "" : "intValue not a decimal string: " + inner.dump();
  if (kind == "boolValue") return inner.is_boolean() ? "" : "boolValue not a boolean";
  if (kind == "doubleValue") {
    if (inner.is_number()) return "";
    if (inner == "NaN" || inner == "Infinity" || inner == "-Infinity") return "";
    return "doubleValue neither a number nor NaN/Infinity: " + inner.dump();
  }
  return "unknown value kind " + kind;
}

// Checks a list of KeyValues; fills `out` (key -> value) and adds what is wrong to `problems`.
void read_attributes(const Json& list, const std::string& where, std::map<std::string, Json>& out,
                     std::vector<std::string>& problems) {
  if (!list.is_array()) {
    problems.push_back(where + ": attributes not an array");
    return;
  }
  for (const auto& entry : list) {
    if (!entry.is_object() || !entry.contains("key") || !entry["key"].is_string() || !entry.contains("value")) {
      problems.push_back(where + ": attribute without a key and a value: " + entry.dump());
      continue;
    }
    const std::string key = entry["key"].get<std::string>();
    if (const std::string why = any_value_problem(entry["value"]); !why.empty()) {
      problems.push_back(where + ": attribute " + key + ": " + why);
      continue;
    }
    if (out.count(key) != 0) problems.push_back(where + ": attribute " + key + " twice");
    out[key] = entry["value"];
  }
}

// The span of `json`, checked; what is wrong goes to `problems` (the span is still returned when
// its ids and name could be read, so a test sees it).
std::optional<ReceivedSpan> read_span(const Json& json, const std::string& service,
                                      std::vector<std::string>& problems) {
  ReceivedSpan span;
  span.service_name = service;
  if (!json.is_object()) {
    problems.push_back("span not an object");
    return std::nullopt;
  }
  const std::string where = "span " + json.value("name", std::string("(no name)"));
  const auto field = [&](const char* key) -> const Json* {
    const auto at = json.find(key);
    return at == json.end() ? nullptr : &*at;
  };
  const Json* trace_id = field("traceId");
  const Json* span_id = field("spanId");
  const Json* name = field("name");
  if (trace_id == nullptr || !lower_hex(*trace_id, 32)) problems.push_back(where + ": traceId not 32 lowercase hex");
  if (span_id == nullptr || !lower_hex(*span_id, 16)) problems.push_back(where + ": spanId not 16 lowercase hex");
  if (name == nullptr || !name->is_string() || name->get<std::string>().empty())
    problems.push_back(where + ": name missing or not a string");
  if (trace_id == nullptr || span_id == nullptr || name == nullptr || !trace_id->is_string() || !span_id->is_string() ||
      !name->is_string())
    return std::nullopt;
  span.trace_id = trace_id->get<std::string>();
  span.span_id = span_id->get<std::string>();
  span.name = name->get<std::string>();
  if (const Json* parent = field("parentSpanId")) {
    if (!lower_hex(*parent, 16)) problems.push_back(where + ": parentSpanId not 16 lowercase hex");
    if (parent->is_string()) span.parent_span_id = parent->get<std::string>();
  }
  const Json* kind = field("kind");
  if (kind == nullptr || !kind->is_number_integer()) {
    problems.push_back(where + ": kind missing or not an integer");
  } else {
    span.kind = kind->get<int>();
  }
  // A time as a decimal string: the time, or why not.
  const auto nanos = [&](const char* key, std::uint64_t& out) {
    const Json* value = field(key);
    const auto read = value == nullptr ? std::nullopt : decimal(*value);
    if (!read) problems.push_back(where + ": " + key + " not a decimal string");
    out = read.value_or(0);
    return read.has_value();
  };
  const bool has_start = nanos("startTimeUnixNano", span.start_unix_nanos);
  if (nanos("endTimeUnixNano", span.end_unix_nanos) && has_start && span.end_unix_nanos < span.start_unix_nanos)
    problems.push_back(where + ": ends before it starts");
  if (const Json* attributes = field("attributes")) read_attributes(*attributes, where, span.attributes, problems);
  const Json* status = field("status");
  if (status == nullptr || !status->is_object()) {
    problems.push_back(where + ": status missing or not an object");
  } else {
    if (status->contains("code")) {
      const Json& code = (*status)["code"];
      if (!code.is_number_integer() || code.get<int>() < 0 || code.get<int>() > 2) {
        problems.push_back(where + ": status.code not 0, 1 or 2: " + code.dump());
      } else {
        span.status_code = code.get<int>();
      }
    }
    if (status->contains("message")) {
      if ((*status)["message"].is_string()) {
        span.status_message = (*status)["message"].get<std::string>();
      } else {
        problems.push_back(where + ": status.message not a string");
      }
    }
  }
  return span;
}

// The spans of one export request body, checked.
std::vector<ReceivedSpan> read_body(const std::string& body, std::vector<std::string>& problems) {
  std::vector<ReceivedSpan> spans;
  const Json json = Json::parse(body, nullptr, false);
  if (json.is_discarded()) {
    problems.push_back("body is not JSON: " + body.substr(0, 200));
    return spans;
  }
  if (!json.is_object() || !json.contains("resourceSpans") || !json["resourceSpans"].is_array()) {
    problems.push_back("no resourceSpans array");
    return spans;
  }
  for (const auto& resource_spans : json["resourceSpans"]) {
    std::string service;
    const Json* attributes = nullptr;
    if (resource_spans.contains("resource") && resource_spans["resource"].is_object() &&
        resource_spans["resource"].contains("attributes"))
      attributes = &resource_spans["resource"]["attributes"];
    if (attributes == nullptr) {
      problems.push_back("resource without attributes");
    } else {
      std::map<std::string, Json> resource;
      read_attributes(*attributes, "resource", resource, problems);
      const auto at = resource.find("service.name");
      if (at == resource.end() || !at->second.contains("stringValue")) {
        problems.push_back("resource without a service.name string");
      } else {
        service = at->second["stringValue"].get<std::string>();
      }
    }
    if (!resource_spans.contains("scopeSpans") || !resource_spans["scopeSpans"].is_array()) {
      problems.push_back("no scopeSpans array");
      continue;
    }
    for (const auto& scope_spans : resource_spans["scopeSpans"]) {
      if (!scope_spans.contains("scope") || scope_spans["scope"].value("name", std::string()) != "jetfan")
        problems.push_back("scope.name is not \"jetfan\": " + scope_spans.value("scope", Json()).dump());
      if (!scope_spans.contains("spans") || !scope_spans["spans"].is_array()) {
        problems.push_back("scopeSpans without a spans array");
        continue;
      }
      for (const auto& span : scope_spans["spans"]) {
        if (auto read = read_span(span, service, problems)) spans.push_back(std::move(*read));
      }
    }
  }
  return spans;
}

}  // namespace

std::optional<std::string> ReceivedSpan::string_attribute(const std::string& key) const {
  const auto at = attributes.find(key);
  if (at == attributes.end() || !at->second.contains("stringValue")) return std::nullopt;
  return at->second["stringValue"].get<std::string>();
}

std::optional<std::int64_t> ReceivedSpan::int_attribute(const std::string& key) const {
  const auto at = attributes.find(key);
  if (at == attributes.end() || !at->second.contains("intValue")) return std::nullopt;
  return std::stoll(at->second["intValue"].get<std::string>());
}

std::optional<double> ReceivedSpan::double_attribute(const std::string& key) const {
  const auto at = attributes.find(key);
  if (at == attributes.end()) return std::nullopt;
  if (at->second.contains("doubleValue") && at->second["doubleValue"].is_number())
    return at->second["doubleValue"].get<double>();
  if (const auto whole = int_attribute(key)) return static_cast<double>(*whole);
  return std::nullopt;
}

// The Beast side: one connection per request at a time, as jetfan's exporter sends them
// ("Connection: close"), but keep-alive is honoured too.
struct OtlpReceiver::Server {
  struct Session : std::enable_shared_from_this<Session> {
    Session(Tcp::socket socket, OtlpReceiver& owner) : stream(std::move(socket)), receiver(owner) {}
    beast::tcp_stream stream;
    beast::flat_buffer buffer;
    http::request<http::string_body> request;
    http::response<http::string_body> response;
    OtlpReceiver& receiver;

    void read() {
      request = {};
      http::async_read(stream, buffer, request, [self = shared_from_this()](beast::error_code error, std::size_t) {
        if (!error) self->answer();
      });
    }
    void answer() {
      const int status = receiver.take(std::string(request.method_string()), std::string(request.target()),
                                       std::string(request[http::field::content_type]), request.body());
      response = {};
      response.version(11);
      response.result(static_cast<unsigned>(status));
      response.set(http::field::content_type, "application/json");
      response.keep_alive(request.keep_alive());
      response.body() =
          status / 100 == 2 ? "{}" : "{\"message\":\"the test collector says " + std::to_string(status) + "\"}";
      response.prepare_payload();
      http::async_write(stream, response, [self = shared_from_this()](beast::error_code error, std::size_t) {
        if (error) return;
        if (self->response.keep_alive()) {
          self->read();
        } else {
          beast::error_code ignored;
          self->stream.socket().shutdown(Tcp::socket::shutdown_send, ignored);
        }
      });
    }
  };

  explicit Server(OtlpReceiver& owner)
      : receiver(owner), acceptor(io, Tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {}

  void accept() {
    acceptor.async_accept([this](boost::system::error_code error, Tcp::socket socket) {
      if (error) return;
      std::make_shared<Session>(std::move(socket), receiver)->read();
      accept();
    });
  }

  OtlpReceiver& receiver;
  asio::io_context io;
  Tcp::acceptor acceptor;
};

OtlpReceiver::OtlpReceiver(int status) : status_(status), server_(std::make_unique<Server>(*this)) {
  port_ = server_->acceptor.local_endpoint().port();
  server_->accept();
  thread_ = std::thread([this] { server_->io.run(); });
}

OtlpReceiver::~OtlpReceiver() {
  server_->io.stop();
  thread_.join();
}

std::string OtlpReceiver::endpoint() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1/traces"; }

void OtlpReceiver::set_status(int status) {
  const std::lock_guard lock(mutex_);
  status_ = status;
}

int OtlpReceiver::take(const std::string& method, const std::string& target, const std::string& content_type,
                       const std::string& body) {
  std::vector<std::string> problems;
  if (method != "POST") problems.push_back("method " + method + ", not POST");
  if (target != "/v1/traces") problems.push_back("target " + target + ", not /v1/traces");
  if (content_type.rfind("application/json", 0) != 0)
    problems.push_back("Content-Type \"" + content_type + "\", not application/json");
  std::vector<ReceivedSpan> spans = read_body(body, problems);
  int status = 0;
  {
    const std::lock_guard lock(mutex_);
    bodies_.push_back(body);
    for (auto& span : spans) spans_.push_back(std::move(span));
    for (auto& problem : problems) violations_.push_back(std::move(problem));
    status = status_;
  }
  arrived_.notify_all();
  return status;
}

std::size_t OtlpReceiver::requests() const {
  const std::lock_guard lock(mutex_);
  return bodies_.size();
}

std::vector<std::string> OtlpReceiver::bodies() const {
  const std::lock_guard lock(mutex_);
  return bodies_;
}

std::vector<ReceivedSpan> OtlpReceiver::spans() const {
  const std::lock_guard lock(mutex_);
  return spans_;
}

std::vector<ReceivedSpan> OtlpReceiver::spans_named(const std::string& name) const {
  std::vector<ReceivedSpan> out;
  for (auto& span : spans()) {
    if (span.name == name) out.push_back(std::move(span));
  }
  return out;
}

std::vector<std::string> OtlpReceiver::violations() const {
  const std::lock_guard lock(mutex_);
  return violations_;
}

bool OtlpReceiver::wait_for(const std::function<bool(const std::vector<ReceivedSpan>&)>& done,
                            std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return arrived_.wait_for(lock, timeout, [&] { return done(spans_); });
}

bool OtlpReceiver::wait_for_spans(const std::string& name, std::size_t count, std::chrono::milliseconds timeout) const {
  return wait_for(
      [&](const std::vector<ReceivedSpan>& spans) {
        return static_cast<std::size_t>(std::count_if(spans.begin(), spans.end(),
                                                      [&](const ReceivedSpan& s) { return s.name == name; })) >= count;
      },
      timeout);
}

bool OtlpReceiver::wait_for_requests(std::size_t count, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return arrived_.wait_for(lock, timeout, [&] { return bodies_.size() >= count; });
}

}  // namespace jetfan::testing
