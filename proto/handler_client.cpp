#include "handler_client.hpp"

#include <sys/socket.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "encoder.hpp"

namespace jetfan {
namespace {

std::string errno_text() { return std::strerror(errno); }

UniqueFd connect_unix(const std::string& path, std::chrono::milliseconds wait) {
  sockaddr_un address{};
  if (path.size() >= sizeof(address.sun_path)) throw ClientError("socket path too long: " + path);
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  const auto give_up = std::chrono::steady_clock::now() + wait;
  for (;;) {
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd) throw ClientError("socket(): " + errno_text());
    if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0) return fd;
    const int error = errno;
    const bool not_up_yet = error == ENOENT || error == ECONNREFUSED;
    if (!not_up_yet || std::chrono::steady_clock::now() >= give_up) {
      throw ClientError("cannot connect to jetfan at " + path + ": " + std::strerror(error));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace

HandlerClient::HandlerClient(const std::string& socket_path, const std::string& handler,
                             std::chrono::milliseconds wait_for_socket)
    : fd_(connect_unix(socket_path, wait_for_socket)), in_(64 * 1024) {
  proto::append_hello(out_, handler);
  flush();
  const auto frame = read_frame();
  if (!frame) throw ClientError("jetfan closed the connection before READY");
  if (frame->kind == proto::Frame::Kind::kErr) throw ClientError("jetfan refused HELLO: " + frame->error);
  if (frame->kind != proto::Frame::Kind::kReady) throw ClientError("expected READY from jetfan");
  ready_ = frame->ready;
}

void HandlerClient::flush() {
  std::size_t written = 0;
  while (written < out_.size()) {
    const ssize_t n = ::send(fd_.get(), out_.data() + written, out_.size() - written, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw ClientError("writing to jetfan: " + errno_text());
    }
    written += static_cast<std::size_t>(n);
  }
  out_.clear();
}

std::optional<proto::Frame> HandlerClient::read_frame() {
  proto::Frame frame;
  for (;;) {
    std::string_view input(in_.data() + in_begin_, in_end_ - in_begin_);
    const auto result = parser_.parse(input, frame);
    in_begin_ = in_end_ - input.size();
    if (result == proto::DeliveryParser::Result::kFrame) return frame;
    if (result == proto::DeliveryParser::Result::kError) {
      throw ClientError("bad data from jetfan: " + parser_.error());
    }
    // Everything buffered was consumed: confirmations go out before we wait for more.
    flush();
    in_begin_ = in_end_ = 0;
    ssize_t n;
    do {
      n = ::recv(fd_.get(), in_.data(), in_.size(), 0);
    } while (n < 0 && errno == EINTR);
    if (n < 0) throw ClientError("reading from jetfan: " + errno_text());
    if (n == 0) return std::nullopt;
    in_end_ = static_cast<std::size_t>(n);
  }
}

std::optional<proto::Delivery> HandlerClient::next() {
  for (;;) {
    auto frame = read_frame();
    if (!frame) return std::nullopt;
    switch (frame->kind) {
      case proto::Frame::Kind::kMsg: return std::move(frame->delivery);
      case proto::Frame::Kind::kPing: proto::append_pong(out_); break;
      case proto::Frame::Kind::kPong: break;
      case proto::Frame::Kind::kErr: throw ClientError("jetfan: " + frame->error);
      case proto::Frame::Kind::kReady: throw ClientError("unexpected second READY from jetfan");
    }
  }
}

void HandlerClient::ack(std::uint64_t id) { proto::append_ack(out_, id); }
void HandlerClient::nak(std::uint64_t id, std::optional<std::uint64_t> delay_ms) { proto::append_nak(out_, id, delay_ms); }
void HandlerClient::term(std::uint64_t id, std::string_view reason) { proto::append_term(out_, id, reason); }
void HandlerClient::wip(std::uint64_t id) {
  // A WIP is sent while the handler is busy, not between next() calls, so it goes out now.
  proto::append_wip(out_, id);
  flush();
}

}  // namespace jetfan
