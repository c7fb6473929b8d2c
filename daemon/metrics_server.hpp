#pragma once
// MetricsServer: HTTP for Prometheus and for probes, with Boost.Beast, on the io_context thread.
//
//   GET /metrics  the Prometheus text format (observe/prometheus_text.hpp)
//   GET /ready    200 while the consumer is bound and the handler socket listens, else 503
//   GET /live     200 while the io_context thread answers
//
// It listens on metrics.listen (loopback unless configured otherwise). Every way in is bounded, so
// that no client of this port can take what handlers and the control socket need:
//   - at most metrics.max_connections connections at once; one more is accepted, answered 503 and
//     closed at once (so it holds no descriptor and waits in no backlog);
//   - a request must arrive whole within kRequestTimeout of the connection or of the previous
//     answer, which bounds a slow header and an idle keep-alive alike;
//   - a request's header may have kMaxHeaderBytes and its body kMaxBodyBytes; more closes it;
//   - a failed accept (out of descriptors, say) waits 100 ms before the next, and is logged at most
//     a few times a minute, with the count of those held back.
//
// Thread: the io_context thread only. Lifetime: sessions outlive the server while their operations
// are pending; they share only a counter with it.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <memory>
#include <string>

#include "config.hpp"
#include "rate_limited_log.hpp"

namespace jetfan {

class MetricsSource {
 public:
  virtual std::string metrics_text() = 0;
  // Empty when ready; otherwise why not.
  virtual std::string not_ready_reason() = 0;

 protected:
  ~MetricsSource() = default;
};

class MetricsServer {
 public:
  static constexpr std::chrono::seconds kRequestTimeout{5};
  static constexpr std::size_t kMaxHeaderBytes = 8 * 1024;
  static constexpr std::size_t kMaxBodyBytes = 1024;

  // Binds and listens. Throws StartupError when it cannot.
  MetricsServer(boost::asio::io_context& io, const MetricsSettings& settings, MetricsSource& source);
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  void start();
  void stop();
  std::uint16_t port() const { return port_; }
  // Connections open now, and those refused for the cap since start.
  std::size_t connections() const { return *open_; }
  std::uint64_t refused() const { return refused_; }

 private:
  void accept();
  void refuse(boost::asio::ip::tcp::socket socket);

  MetricsSource& source_;
  std::size_t max_connections_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer retry_;  // after a failed accept (out of file descriptors, say)
  std::shared_ptr<std::size_t> open_ = std::make_shared<std::size_t>(0);  // shared with the sessions
  std::uint64_t refused_ = 0;
  RateLimitedLog warnings_;
  std::uint16_t port_ = 0;
};

}  // namespace jetfan
