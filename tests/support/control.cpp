#include "control.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace jetfan::testing {
namespace {

UniqueFd connect_unix(const std::string& path) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    throw std::runtime_error("connect " + path + ": " + std::strerror(errno));
  }
  return fd;
}

void send_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) throw std::runtime_error("send failed");
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

// Reads until the peer closes or `timeout` passes.
std::string read_to_end(int fd, std::chrono::milliseconds timeout) {
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    char chunk[65536];
    const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) break;
    out.append(chunk, static_cast<std::size_t>(n));
  }
  return out;
}

}  // namespace

std::string control_request(const std::string& path, const std::string& command, std::chrono::milliseconds timeout) {
  UniqueFd fd = connect_unix(path);
  send_all(fd.get(), command + "\n");
  return read_to_end(fd.get(), timeout);
}

ControlStream::ControlStream(const std::string& path, const std::string& command) : fd_(connect_unix(path)) {
  send_all(fd_.get(), command + "\n");
}

std::optional<std::string> ControlStream::line(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (const auto end = buffer_.find('\n'); end != std::string::npos) {
      std::string line = buffer_.substr(0, end);
      buffer_.erase(0, end + 1);
      return line;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd p{fd_.get(), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return std::nullopt;
    char chunk[65536];
    const ssize_t n = ::recv(fd_.get(), chunk, sizeof chunk, 0);
    if (n <= 0) return std::nullopt;
    buffer_.append(chunk, static_cast<std::size_t>(n));
  }
}

HttpReply http_get(int port, const std::string& path) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) return {};
  send_all(fd.get(), "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  const std::string reply = read_to_end(fd.get(), std::chrono::seconds(20));
  HttpReply out;
  if (reply.rfind("HTTP/1.1 ", 0) != 0) return out;
  out.status = std::stoi(reply.substr(9, 3));
  const auto body = reply.find("\r\n\r\n");
  if (body != std::string::npos) out.body = reply.substr(body + 4);
  return out;
}

std::map<std::string, double> parse_metrics(const std::string& text) {
  std::map<std::string, double> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto space = line.rfind(' ');
    out[line.substr(0, space)] = std::stod(line.substr(space + 1));
  }
  return out;
}

int metrics_port(const std::string& jetfan_log) {
  const std::string marker = "metrics: serving http://127.0.0.1:";
  const auto at = jetfan_log.find(marker);
  if (at == std::string::npos) return 0;
  return std::stoi(jetfan_log.substr(at + marker.size()));
}

long rss_kib(int pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

FastPublisher::FastPublisher(const std::string& url) {
  natsConnection* raw = nullptr;
  if (natsConnection_ConnectTo(&raw, url.c_str()) != NATS_OK) throw std::runtime_error("connect " + url);
  connection_.reset(raw);
}

void FastPublisher::publish(const std::string& subject, const std::string& payload) {
  if (natsConnection_Publish(connection_.get(), subject.c_str(), payload.data(), static_cast<int>(payload.size())) !=
      NATS_OK) {
    throw std::runtime_error("publish " + subject);
  }
}

void FastPublisher::flush() { natsConnection_FlushTimeout(connection_.get(), 20000); }

}  // namespace jetfan::testing
