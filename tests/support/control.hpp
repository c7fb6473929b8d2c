#pragma once
// Test support: jetfan's control socket, its HTTP endpoint, and a fast publisher.

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "nats_handles.hpp"
#include "unique_fd.hpp"

namespace jetfan::testing {

// Sends one command on the control socket and returns everything jetfan wrote before closing.
std::string control_request(const std::string& path, const std::string& command,
                            std::chrono::milliseconds timeout = std::chrono::seconds(20));

// A command whose reply comes line by line (TAIL, REDRIVE). It reads only when asked, so a test
// can let it fall behind.
class ControlStream {
 public:
  ControlStream(const std::string& path, const std::string& command);
  // The next line (without its newline), or nullopt if none came within `timeout`.
  std::optional<std::string> line(std::chrono::milliseconds timeout = std::chrono::seconds(10));

 private:
  UniqueFd fd_;
  std::string buffer_;
};

// A TAIL connection.
class TailStream : public ControlStream {
 public:
  TailStream(const std::string& path, const std::string& pattern)
      : ControlStream(path, pattern.empty() ? "TAIL" : "TAIL " + pattern) {}
};

struct HttpReply {
  int status = 0;
  std::string body;
};
// GET http://127.0.0.1:<port><path>; status 0 when nothing answered.
HttpReply http_get(int port, const std::string& path);

// Prometheus text -> {"name{labels}": value}; comments skipped.
std::map<std::string, double> parse_metrics(const std::string& text);

// The port in jetfan's "metrics: serving http://127.0.0.1:PORT/metrics" log line; 0 if none yet.
int metrics_port(const std::string& jetfan_log);

// The resident set size of a process, in KiB.
long rss_kib(int pid);

// Publishes with core NATS (the stream stores them) as fast as the connection takes them, then
// flushes: for tests that need much traffic.
class FastPublisher {
 public:
  explicit FastPublisher(const std::string& url);
  void publish(const std::string& subject, const std::string& payload);
  void flush();

 private:
  NatsConnectionPtr connection_;
};

}  // namespace jetfan::testing
