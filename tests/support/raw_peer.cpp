#include "raw_peer.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cstring>
#include <stdexcept>

namespace jetfan::testing {

RawPeer::RawPeer(const std::string& socket_path) : fd_(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, socket_path.c_str(), sizeof(address.sun_path) - 1);
  if (::connect(fd_.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    throw std::runtime_error("connect " + socket_path + ": " + std::strerror(errno));
  }
}

void RawPeer::send(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd_.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return;  // jetfan may already have closed it; the test checks what it said
    sent_ += static_cast<std::size_t>(n);
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

std::optional<proto::Frame> RawPeer::next(std::chrono::milliseconds timeout) {
  if (!kept_.empty()) {
    auto frame = std::move(kept_.front());
    kept_.erase(kept_.begin());
    return frame;
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    std::string_view input(buffer_.data() + offset_, buffer_.size() - offset_);
    proto::Frame frame;
    const auto result = parser_.parse(input, frame);
    offset_ = buffer_.size() - input.size();
    if (result == proto::DeliveryParser::Result::kFrame) return frame;
    if (result == proto::DeliveryParser::Result::kError) throw std::runtime_error("bad frame: " + parser_.error());
    buffer_.clear();
    offset_ = 0;
    if (eof_) return std::nullopt;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd p{fd_.get(), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return std::nullopt;
    char chunk[65536];
    const ssize_t n = ::recv(fd_.get(), chunk, sizeof chunk, 0);
    if (n <= 0) {
      eof_ = true;
      continue;
    }
    received_ += static_cast<std::size_t>(n);
    buffer_.assign(chunk, static_cast<std::size_t>(n));
  }
}

bool RawPeer::wait_closed(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!eof_) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_.get(), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    char chunk[4096];
    const ssize_t n = ::recv(fd_.get(), chunk, sizeof chunk, 0);
    if (n <= 0) eof_ = true;
    if (n > 0) received_ += static_cast<std::size_t>(n);
  }
  return true;
}

bool RawPeer::sync() {
  send("PING\r\n");
  std::vector<proto::Frame> before;
  for (;;) {
    auto frame = next();
    if (!frame) return false;
    if (frame->kind == proto::Frame::Kind::kPong) break;
    before.push_back(std::move(*frame));
  }
  kept_.insert(kept_.end(), before.begin(), before.end());
  return true;
}

proto::Frame next_msg(RawPeer& peer, std::chrono::milliseconds timeout) {
  for (;;) {
    auto frame = peer.next(timeout);
    if (!frame) throw std::runtime_error("no MSG: jetfan closed the connection or sent nothing in time");
    if (frame->kind == proto::Frame::Kind::kMsg) return *frame;
    if (frame->kind == proto::Frame::Kind::kErr) throw std::runtime_error("ERR instead of a MSG: " + frame->error);
  }
}

void hello_v3(RawPeer& peer, const std::string& handler) {
  peer.send("HELLO " + handler + " 3\r\n");
  const auto ready = peer.next();
  if (!ready || ready->kind != proto::Frame::Kind::kReady || ready->ready.version != 3) {
    throw std::runtime_error("HELLO " + handler + " 3 was not answered READY 3" +
                             (ready && ready->kind == proto::Frame::Kind::kErr ? ": ERR " + ready->error : ""));
  }
}

}  // namespace jetfan::testing
