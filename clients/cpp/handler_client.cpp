#include "handler_client.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "encoder.hpp"
#include "handler_client_state.hpp"
#include "nats_headers.hpp"
#include "unix_socket.hpp"

namespace jetfan {
namespace {

using Clock = std::chrono::steady_clock;

std::string errno_text(int error) { return std::strerror(error); }

long long millis(Clock::duration d) {
  return static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
}

}  // namespace

// --- Delivery

std::vector<std::pair<std::string, std::string>> Delivery::header_list() const { return parse_headers(headers); }

std::optional<std::string> Delivery::header(std::string_view name) const {
  if (headers.empty()) return std::nullopt;
  const auto list = parse_headers(headers);
  const std::string* value = find_header(list, name);
  if (!value) return std::nullopt;
  return *value;
}

// --- State

HandlerClient::State::State(std::string path, std::string name, ClientOptions opts)
    : socket_path(std::move(path)),
      handler(std::move(name)),
      options(std::move(opts)),
      wake(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
      in(64 * 1024) {
  if (!wake) throw ClientError(ClientError::Kind::kIo, "jetfan client: eventfd(): " + errno_text(errno));
}

void HandlerClient::State::log(const std::string& line) const {
  if (options.log) {
    options.log(line);
  } else {
    std::fprintf(stderr, "jetfan client [%s]: %s\n", handler.c_str(), line.c_str());
  }
}

HandlerClient::State::Read HandlerClient::State::read_frame(proto::Frame& frame, int& error) {
  for (;;) {
    std::string_view input(in.data() + in_begin, in_end - in_begin);
    const auto result = parser.parse(input, frame);
    in_begin = in_end - input.size();
    if (result == proto::DeliveryParser::Result::kFrame) return Read::kFrame;
    if (result == proto::DeliveryParser::Result::kError) {
      throw ClientError(ClientError::Kind::kProtocol,
                        "jetfan at " + socket_path + " sent what the protocol does not allow (" +
                            proto::to_string(parser.code()) + "): " + parser.error(),
                        {}, parser.code());
    }
    // The parser has taken everything buffered. Confirmations go out before we wait, and while we
    // wait other threads write theirs themselves.
    in_begin = in_end = 0;
    {
      std::lock_guard lock(mutex);
      write_out_locked();
      reader_waiting = true;
    }
    Read outcome = Read::kFrame;
    for (;;) {
      const auto got = unix_socket::receive(fd.get(), in.data(), in.size());
      if (got.status == unix_socket::Io::kDone) {
        in_end = got.bytes;
        break;
      }
      if (got.status == unix_socket::Io::kClosed) {
        outcome = Read::kClosed;
        break;
      }
      if (got.status == unix_socket::Io::kError) {
        error = got.error;
        outcome = Read::kFailed;
        break;
      }
      if (unix_socket::wait(fd.get(), POLLIN, wake.get(), -1) == unix_socket::Woken::kWake) {
        outcome = Read::kStopped;
        break;
      }
    }
    {
      std::lock_guard lock(mutex);
      reader_waiting = false;
    }
    if (outcome != Read::kFrame) return outcome;
  }
}

HandlerClient::State::Attempt HandlerClient::State::try_connect(std::uint32_t version) {
  auto connected_fd = unix_socket::connect(socket_path);
  if (!connected_fd.fd) {
    const int e = connected_fd.error;
    return {false, false, e != ENOENT && e != ECONNREFUSED && e != EAGAIN, errno_text(e)};
  }
  {
    std::lock_guard lock(mutex);
    fd = std::move(connected_fd.fd);
    out.clear();
    unconfirmed.clear();
    broken = false;
    proto::append_hello(out, handler, version);
    write_out_locked();
  }
  parser = proto::DeliveryParser{};
  in_begin = in_end = 0;
  connected = true;
  for (;;) {
    proto::Frame frame;
    int error = 0;
    const Read read = read_frame(frame, error);
    if (read == Read::kStopped) return {false, true, false, "stopped"};
    if (read != Read::kFrame) {
      drop_connection("", false);
      return {false, false, false,
              read == Read::kClosed ? "jetfan closed the connection before READY" : errno_text(error)};
    }
    switch (frame.kind) {
      case proto::Frame::Kind::kReady: {
        if (frame.ready.version < proto::kVersion1 || frame.ready.version > version) {
          drop_connection("", false);
          throw ClientError(ClientError::Kind::kProtocol,
                            "jetfan at " + socket_path + " answered HELLO in protocol version " +
                                std::to_string(frame.ready.version) + ", not one up to " + std::to_string(version));
        }
        std::lock_guard lock(mutex);
        ready = std::move(frame.ready);
        ++connections;
        return {true, false, false, {}};
      }
      case proto::Frame::Kind::kErr:
        drop_connection("", false);
        // A jetfan older than the version asked for refuses it before anything is delivered
        // (PROTOCOL.md, "Version negotiation"): speak version 1 with it.
        if (version > proto::kVersion1 && frame.error.find("protocol version") != std::string::npos) {
          return try_connect(proto::kVersion1);
        }
        throw ClientError(ClientError::Kind::kRefused,
                          "jetfan at " + socket_path + " refused handler \"" + handler + "\": " + frame.error,
                          frame.error);
      case proto::Frame::Kind::kPing: {
        std::lock_guard lock(mutex);
        proto::append_pong(out);
        break;
      }
      case proto::Frame::Kind::kPong:
        break;
      case proto::Frame::Kind::kMsg:
      case proto::Frame::Kind::kPubOk:
      case proto::Frame::Kind::kPubErr:
        drop_connection("", false);
        throw ClientError(ClientError::Kind::kProtocol,
                          "jetfan at " + socket_path + " sent " +
                              (frame.kind == proto::Frame::Kind::kMsg ? "MSG" : "a PUB's answer") + " before READY");
    }
  }
}

bool HandlerClient::State::connect(bool first) {
  const auto started = Clock::now();
  auto backoff = options.backoff_initial;
  int attempts = 0;
  for (;;) {
    if (stopping) return false;
    const Attempt attempt = try_connect(options.protocol_version);
    ++attempts;
    if (attempt.ok) {
      if (!first) log("reconnected to jetfan at " + socket_path + " after " + std::to_string(attempts) + " attempt(s)");
      return true;
    }
    if (attempt.stopped) return false;
    const auto elapsed = Clock::now() - started;
    if (first && (attempt.permanent || elapsed >= options.connect_timeout)) {
      throw ClientError(ClientError::Kind::kConnect, "cannot connect to jetfan at " + socket_path + " as handler \"" +
                                                         handler + "\": " + attempt.error + " (tried " +
                                                         std::to_string(attempts) + " time(s) in " +
                                                         std::to_string(millis(elapsed)) + " ms)");
    }
    auto wait = backoff;
    if (first)
      wait = std::min(wait, std::chrono::duration_cast<std::chrono::milliseconds>(options.connect_timeout - elapsed));
    if (unix_socket::wait(wake.get(), POLLIN, -1, static_cast<int>(wait.count())) != unix_socket::Woken::kTimeout) {
      return false;  // stop() was called
    }
    backoff = std::min(backoff * 2, options.backoff_max);
  }
}

void HandlerClient::State::drop_connection(const std::string& why, bool announce) {
  std::size_t lost = 0;
  {
    std::lock_guard lock(mutex);
    lost = unconfirmed.size();
    unconfirmed.clear();
    out.clear();
    fd.reset();
    broken = false;
  }
  unconfirmed_shrank.notify_all();
  connected = false;
  if (announce) {
    log("lost the connection to jetfan at " + socket_path + " (" + why + "); jetfan redelivers the " +
        std::to_string(lost) + " deliveries it had unconfirmed; " +
        (options.reconnect ? "reconnecting" : "not reconnecting"));
  }
}

std::optional<Delivery> HandlerClient::State::next() {
  reader_thread = std::this_thread::get_id();
  for (;;) {
    if (stopping) return std::nullopt;
    if (!connected) {
      if (!options.reconnect || !connect(false)) return std::nullopt;
    }
    proto::Frame frame;
    int error = 0;
    switch (read_frame(frame, error)) {
      case Read::kStopped:
        return std::nullopt;
      case Read::kClosed:
        drop_connection("jetfan closed it", true);
        continue;
      case Read::kFailed: {
        const std::string why = "reading failed: " + errno_text(error);
        drop_connection(why, true);
        if (!options.reconnect) throw ClientError(ClientError::Kind::kIo, "jetfan at " + socket_path + ": " + why);
        continue;
      }
      case Read::kFrame:
        break;
    }
    switch (frame.kind) {
      case proto::Frame::Kind::kMsg: {
        auto& wire = frame.delivery;
        Delivery delivery{
            0, std::move(wire.key), wire.stream_seq, wire.deliveries, std::move(wire.headers), std::move(wire.payload)};
        delivery.subject = std::move(wire.subject);
        delivery.server_deliveries = wire.server_deliveries;
        if (!wire.traceparent.empty()) delivery.traceparent = std::move(wire.traceparent);
        if (wire.published_ns != 0) {
          delivery.published =
              std::chrono::system_clock::time_point(std::chrono::duration_cast<std::chrono::system_clock::duration>(
                  std::chrono::nanoseconds(wire.published_ns)));
        }
        std::lock_guard lock(mutex);
        delivery.id = next_id++;
        unconfirmed.emplace(delivery.id, wire.id);
        return delivery;
      }
      case proto::Frame::Kind::kPing: {
        std::lock_guard lock(mutex);
        proto::append_pong(out);  // written before the next wait for input
        break;
      }
      case proto::Frame::Kind::kPong:
        break;
      case proto::Frame::Kind::kErr:
        drop_connection("", false);
        throw ClientError(ClientError::Kind::kRefused,
                          "jetfan at " + socket_path + " sent ERR and closed the connection: " + frame.error,
                          frame.error);
      case proto::Frame::Kind::kReady:
        drop_connection("", false);
        throw ClientError(ClientError::Kind::kProtocol, "jetfan at " + socket_path + " sent a second READY");
      case proto::Frame::Kind::kPubOk:
      case proto::Frame::Kind::kPubErr:  // this client sends no PUB
        drop_connection("", false);
        throw ClientError(ClientError::Kind::kProtocol, "jetfan at " + socket_path + " answered a PUB (request " +
                                                            std::to_string(frame.publish.id) +
                                                            ") this client never sent");
    }
  }
}

bool HandlerClient::State::confirm(std::uint64_t id, proto::Verb verb, std::optional<std::uint64_t> delay_ms,
                                   std::string_view reason) {
  std::unique_lock lock(mutex);
  const auto found = unconfirmed.find(id);
  if (found == unconfirmed.end()) return false;
  const std::uint64_t wire = found->second;
  switch (verb) {
    case proto::Verb::kAck:
      proto::append_ack(out, wire);
      break;
    case proto::Verb::kNak:
      proto::append_nak(out, wire, delay_ms, reason, ready.version);  // a reason from version 3 on
      break;
    case proto::Verb::kTerm:
      proto::append_term(out, wire, reason);
      break;
    default:
      proto::append_wip(out, wire);
      break;
  }
  const bool settles = verb != proto::Verb::kWip;
  if (settles) unconfirmed.erase(found);
  // The reading thread writes its own confirmations in batches before it waits; anyone else's
  // would wait for that, so they go now.
  if (!settles || reader_waiting || reader_thread.load() != std::this_thread::get_id()) write_out_locked();
  lock.unlock();
  if (settles) unconfirmed_shrank.notify_all();
  return true;
}

void HandlerClient::State::write_out_locked() {
  if (out.empty()) return;
  std::size_t done = 0;
  while (fd && !broken && done < out.size()) {
    const auto sent = unix_socket::send(fd.get(), out.data() + done, out.size() - done);
    if (sent.status == unix_socket::Io::kDone) {
      done += sent.bytes;
    } else if (sent.status != unix_socket::Io::kWouldBlock ||
               unix_socket::wait(fd.get(), POLLOUT, wake.get(), -1) == unix_socket::Woken::kWake) {
      // The connection is going (the reader will see it end) or we are stopping; a frame cut
      // short must not be followed by another.
      broken = true;
    }
  }
  out.clear();
}

void HandlerClient::State::wait_below_limit() {
  std::unique_lock lock(mutex);
  const std::size_t limit = std::max<std::uint32_t>(1, ready.max_unconfirmed);
  while (!stopping && fd && unconfirmed.size() >= limit) {
    // stop() may come from a signal handler, which cannot notify: look again now and then.
    unconfirmed_shrank.wait_for(lock, std::chrono::milliseconds(100));
  }
}

// --- HandlerClient

HandlerClient::HandlerClient(std::string socket_path, std::string handler, ClientOptions options)
    : state_(std::make_unique<State>(std::move(socket_path), std::move(handler), std::move(options))) {
  state_->connect(true);
}

HandlerClient::~HandlerClient() = default;

proto::Ready HandlerClient::ready() const {
  std::lock_guard lock(state_->mutex);
  return state_->ready;
}

std::optional<Delivery> HandlerClient::next() { return state_->next(); }

bool HandlerClient::ack(std::uint64_t id) { return state_->confirm(id, proto::Verb::kAck, std::nullopt, {}); }
bool HandlerClient::nak(std::uint64_t id, std::optional<std::uint64_t> delay_ms, std::string_view reason) {
  return state_->confirm(id, proto::Verb::kNak, delay_ms, reason);
}
bool HandlerClient::term(std::uint64_t id, std::string_view reason) {
  return state_->confirm(id, proto::Verb::kTerm, std::nullopt, reason);
}
bool HandlerClient::wip(std::uint64_t id) { return state_->confirm(id, proto::Verb::kWip, std::nullopt, {}); }

void HandlerClient::flush() {
  std::lock_guard lock(state_->mutex);
  state_->write_out_locked();
}

void HandlerClient::stop() noexcept {
  state_->stopping = true;
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto ignored = ::write(state_->wake.get(), &one, sizeof one);
}

std::uint64_t HandlerClient::connections() const {
  std::lock_guard lock(state_->mutex);
  return state_->connections;
}

}  // namespace jetfan
