#include "raw_nats.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstring>
#include <regex>
#include <stdexcept>

namespace jetfan::testing {

namespace {
constexpr const char* kInbox = "_INBOX.rawnats.";
}

RawNats::RawNats(const std::string& url) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
  static const std::regex kUrl(R"(^[a-z]+://127\.0\.0\.1:([0-9]+)$)");
  std::smatch match;
  if (!std::regex_match(url, match, kUrl)) throw std::runtime_error("RawNats: not a local URL: " + url);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(std::stoi(match[1])));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    throw std::runtime_error("RawNats: connect " + url + ": " + std::strerror(errno));
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  if (line(deadline).rfind("INFO ", 0) != 0) throw std::runtime_error("RawNats: no INFO from " + url);
  send(R"(CONNECT {"verbose":false,"pedantic":false,"headers":true,"no_responders":true,"protocol":1})"
       "\r\nSUB " +
       std::string(kInbox) + "* 1\r\nPING\r\n");
  for (std::string got = line(deadline); got != "PONG"; got = line(deadline)) {
    if (got.rfind("-ERR", 0) == 0) throw std::runtime_error("RawNats: " + got);
  }
}

std::uint64_t RawNats::publish(const std::string& subject, const std::string& headers, const std::string& payload,
                               std::chrono::milliseconds timeout) {
  const std::string reply = kInbox + std::to_string(next_reply_++);
  const std::string total = std::to_string(headers.size() + payload.size());
  send((headers.empty() ? "PUB " + subject + " " + reply + " " + total
                        : "HPUB " + subject + " " + reply + " " + std::to_string(headers.size()) + " " + total) +
       "\r\n" + headers + payload + "\r\n");
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    // MSG <subject> <sid> <bytes>, or HMSG <subject> <sid> <header bytes> <bytes> (a status)
    const std::string got = line(deadline);
    if (got.rfind("-ERR", 0) == 0) throw std::runtime_error("RawNats: " + got);
    const bool with_headers = got.rfind("HMSG ", 0) == 0;
    if (!with_headers && got.rfind("MSG ", 0) != 0) continue;
    const std::size_t last = got.rfind(' ');
    const std::string body = bytes(std::stoul(got.substr(last + 1)) + 2, deadline);
    if (got.find(" " + reply + " ") == std::string::npos) continue;  // an answer to an earlier publish
    static const std::regex kSeq(R"("seq":([0-9]+))");
    std::smatch match;
    if (with_headers || body.find("\"error\"") != std::string::npos || !std::regex_search(body, match, kSeq)) {
      throw std::runtime_error("RawNats: JetStream did not store the message on " + subject + ": " + body);
    }
    return std::stoull(match[1]);
  }
}

void RawNats::send(const std::string& bytes) {
  std::string_view rest = bytes;
  while (!rest.empty()) {
    const ssize_t n = ::send(fd_.get(), rest.data(), rest.size(), MSG_NOSIGNAL);
    if (n <= 0) throw std::runtime_error(std::string("RawNats: send: ") + std::strerror(errno));
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
}

void RawNats::fill(std::chrono::steady_clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
  pollfd p{fd_.get(), POLLIN, 0};
  if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0) throw std::runtime_error("RawNats: no answer in time");
  char chunk[65536];
  const ssize_t n = ::recv(fd_.get(), chunk, sizeof chunk, 0);
  if (n <= 0) throw std::runtime_error("RawNats: the server closed the connection");
  buffer_.append(chunk, static_cast<std::size_t>(n));
}

std::string RawNats::line(std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    const std::size_t end = buffer_.find("\r\n");
    if (end != std::string::npos) {
      std::string got = buffer_.substr(0, end);
      buffer_.erase(0, end + 2);
      if (got == "PING") {
        send("PONG\r\n");
        continue;
      }
      return got;
    }
    fill(deadline);
  }
}

std::string RawNats::bytes(std::size_t count, std::chrono::steady_clock::time_point deadline) {
  while (buffer_.size() < count) fill(deadline);
  std::string got = buffer_.substr(0, count);
  buffer_.erase(0, count);
  return got;
}

}  // namespace jetfan::testing
