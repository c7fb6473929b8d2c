#include "metrics_server.hpp"

#include <spdlog/spdlog.h>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <memory>

#include "logging.hpp"
#include "prometheus_text.hpp"
#include "startup_error.hpp"

namespace jetfan {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using Tcp = asio::ip::tcp;

namespace {

constexpr std::chrono::seconds kIdleTimeout{10};

// One HTTP connection: read a request, answer it, again while the client keeps it alive.
class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(Tcp::socket socket, MetricsSource& source) : stream_(std::move(socket)), source_(source) {}

  void read() {
    request_ = {};
    stream_.expires_after(kIdleTimeout);
    http::async_read(stream_, buffer_, request_, [self = shared_from_this()](beast::error_code error, std::size_t) {
      if (error) {
        self->close();
        return;
      }
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
  beast::flat_buffer buffer_;
  http::request<http::string_body> request_;
  http::response<http::string_body> response_;
};

}  // namespace

MetricsServer::MetricsServer(asio::io_context& io, const MetricsSettings& settings, MetricsSource& source)
    : source_(source), acceptor_(io), retry_(io) {
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
      log_warn("metrics.accept_failed", {{"reason", error.message()}},
               "metrics: accept failed: {}; accepting again in 100ms", error.message());
      retry_.expires_after(std::chrono::milliseconds(100));
      retry_.async_wait([this](const boost::system::error_code& cancelled) {
        if (!cancelled) accept();
      });
      return;
    }
    std::make_shared<HttpSession>(std::move(socket), source_)->read();
    accept();
  });
}

}  // namespace jetfan
