#include "metrics_server.hpp"

#include <spdlog/spdlog.h>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <array>
#include <memory>
#include <optional>
#include <string_view>

#include "logging.hpp"
#include "prometheus_text.hpp"
#include "startup_error.hpp"

namespace jetfan {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using Tcp = asio::ip::tcp;

namespace {

constexpr auto kAcceptRetry = std::chrono::milliseconds(100);

// One HTTP connection: read a request, answer it, again while the client keeps it alive.
class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(Tcp::socket socket, MetricsSource& source, std::shared_ptr<std::size_t> open)
      : stream_(std::move(socket)), source_(source), open_(std::move(open)) {
    ++*open_;
  }
  ~HttpSession() { --*open_; }
  HttpSession(const HttpSession&) = delete;
  HttpSession& operator=(const HttpSession&) = delete;

  void read() {
    parser_.emplace();
    parser_->header_limit(MetricsServer::kMaxHeaderBytes);
    parser_->body_limit(MetricsServer::kMaxBodyBytes);
    stream_.expires_after(MetricsServer::kRequestTimeout);
    http::async_read(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code error, std::size_t) {
      if (error) {
        self->close();
        return;
      }
      self->request_ = self->parser_->release();
      self->answer();
    });
  }

 private:
  void answer() {
    response_ = {};
    response_.version(request_.version());
    response_.keep_alive(request_.keep_alive());
    response_.set(http::field::server, "jetfan");
    const auto target = request_.target();
    const auto path = target.substr(0, target.find('?'));
    if (request_.method() != http::verb::get && request_.method() != http::verb::head) {
      respond(http::status::method_not_allowed, "text/plain", "only GET and HEAD\n");
    } else if (path == "/metrics") {
      respond(http::status::ok, kPrometheusContentType, source_.metrics_text());
    } else if (path == "/ready") {
      const std::string why = source_.not_ready_reason();
      if (why.empty()) {
        respond(http::status::ok, "text/plain", "ready\n");
      } else {
        respond(http::status::service_unavailable, "text/plain", "not ready: " + why + "\n");
      }
    } else if (path == "/live") {
      respond(http::status::ok, "text/plain", "live\n");
    } else {
      respond(http::status::not_found, "text/plain", "not found; try /metrics, /ready or /live\n");
    }
  }

  void respond(http::status status, const char* type, std::string body) {
    response_.result(status);
    response_.set(http::field::content_type, type);
    if (request_.method() == http::verb::head) {
      response_.content_length(body.size());
    } else {
      response_.body() = std::move(body);
      response_.prepare_payload();
    }
    http::async_write(stream_, response_, [self = shared_from_this()](beast::error_code error, std::size_t) {
      if (error || !self->response_.keep_alive()) {
        self->close();
        return;
      }
      self->read();
    });
  }

  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(Tcp::socket::shutdown_send, ignored);
    stream_.close();
  }

  beast::tcp_stream stream_;
  MetricsSource& source_;
  std::shared_ptr<std::size_t> open_;
  beast::flat_buffer buffer_{MetricsServer::kMaxHeaderBytes + MetricsServer::kMaxBodyBytes};
  std::optional<http::request_parser<http::string_body>> parser_;
  http::request<http::string_body> request_;
  http::response<http::string_body> response_;
};

}  // namespace

MetricsServer::MetricsServer(asio::io_context& io, const MetricsSettings& settings, MetricsSource& source)
    : source_(source),
      max_connections_(settings.max_connections),
      acceptor_(io),
      retry_(io),
      warnings_(3, std::chrono::minutes(1)) {
  const std::string where = settings.host + ":" + std::to_string(settings.port);
  boost::system::error_code error;
  const auto address = asio::ip::make_address(settings.host, error);
  if (error) throw StartupError(kExitConfig, "metrics.listen: \"" + settings.host + "\" is not an IP address");
  const Tcp::endpoint endpoint(address, settings.port);
  acceptor_.open(endpoint.protocol(), error);
  if (!error) acceptor_.set_option(asio::socket_base::reuse_address(true), error);
  if (!error) acceptor_.bind(endpoint, error);
  if (!error) acceptor_.listen(asio::socket_base::max_listen_connections, error);
  if (error) throw StartupError(kExitUnavailable, "metrics.listen: cannot listen on " + where + ": " + error.message());
  port_ = acceptor_.local_endpoint().port();
}

void MetricsServer::start() { accept(); }

void MetricsServer::stop() {
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  retry_.cancel();
}

void MetricsServer::accept() {
  acceptor_.async_accept([this](const boost::system::error_code& error, Tcp::socket socket) {
    if (error == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (error) {
      // Accepting again at once would spin while the cause (EMFILE, say) lasts.
      warnings_.warn(std::chrono::steady_clock::now(), "accept", "metrics.accept_failed", {{"reason", error.message()}},
                     "metrics: accept failed: {}; accepting again in {}ms", error.message(), kAcceptRetry.count());
      retry_.expires_after(kAcceptRetry);
      retry_.async_wait([this](const boost::system::error_code& cancelled) {
        if (!cancelled) accept();
      });
      return;
    }
    if (*open_ >= max_connections_) {
      refuse(std::move(socket));
    } else {
      std::make_shared<HttpSession>(std::move(socket), source_, open_)->read();
    }
    accept();
  });
}

void MetricsServer::refuse(Tcp::socket socket) {
  ++refused_;
  warnings_.warn(std::chrono::steady_clock::now(), "full", "metrics.connection_refused",
                 {{"open", *open_}, {"max_connections", max_connections_}, {"refused", refused_}},
                 "metrics: {} connections open (metrics.max_connections); answering one more 503 and closing it "
                 "({} so since start)",
                 *open_, refused_);
  // The answer fits an empty socket buffer; a peer that does not read it loses nothing it asked for.
  static constexpr std::string_view kBusy =
      "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: 26\r\nConnection: "
      "close\r\n\r\ntoo many connections open\n";
  boost::system::error_code ignored;
  socket.non_blocking(true, ignored);
  socket.write_some(asio::buffer(kBusy), ignored);
  socket.shutdown(Tcp::socket::shutdown_send, ignored);
  // Closing with unread input sends a reset, which can cost the peer the answer: what it sent so
  // far is read and dropped first (at most one read; a peer still sending may get the reset).
  std::array<char, 4096> scratch{};
  socket.read_some(asio::buffer(scratch), ignored);
  socket.close(ignored);
}

}  // namespace jetfan
