#pragma once
// MetricsServer: HTTP for Prometheus and for probes, with Boost.Beast, on the io_context thread.
//
//   GET /metrics  the Prometheus text format (observe/prometheus_text.hpp)
//   GET /ready    200 while the consumer is bound and the handler socket listens, else 503
//   GET /live     200 while the io_context thread answers
//
// It listens on metrics.listen (loopback unless configured otherwise). Requests are small and
// answered at once; a connection that sends nothing for 10s is closed.
//
// Thread: the io_context thread only.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <string>

#include "config.hpp"

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
  // Binds and listens. Throws StartupError when it cannot.
  MetricsServer(boost::asio::io_context& io, const MetricsSettings& settings, MetricsSource& source);
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  void start();
  void stop();
  std::uint16_t port() const { return port_; }

 private:
  void accept();

  MetricsSource& source_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer retry_;  // after a failed accept (out of file descriptors, say)
  std::uint16_t port_ = 0;
};

}  // namespace jetfan
