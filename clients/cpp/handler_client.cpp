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

// `text` for a reason: each byte that is not printable ASCII made "?", at most 200 bytes of it.
std::string printable(std::string_view text) {
  std::string out(text.substr(0, 200));
  for (char& c : out) {
    if (c < 0x20 || c == 0x7f) c = '?';
  }
  return out;
}

// The header block of a PUB ("NATS/1.0\r\n", "Name: value\r\n" lines, "\r\n"), or "" for no
// headers. false, with `why`, for a name or value it cannot hold: a name must be printable ASCII
// without ':' or blanks, a value must not break the line.
bool header_block(const Headers& headers, std::string& block, std::string& why) {
  block.clear();
  if (headers.empty()) return true;
  block = "NATS/1.0\r\n";
  for (const auto& [name, value] : headers) {
    const bool bad_name = name.empty() || std::any_of(name.begin(), name.end(), [](char c) {
                            const auto byte = static_cast<unsigned char>(c);
                            return byte <= 0x20 || byte >= 0x7f || c == ':';
                          });
    if (bad_name) {
      why = "header name \"" + printable(name) + "\" is not printable ASCII without ':' and blanks";
      return false;
    }
    if (value.find_first_of("\r\n") != std::string::npos) {
      why = "the value of header " + name + " has a line break";
      return false;
    }
    block.append(name).append(": ").append(value).append("\r\n");
  }
  block.append("\r\n");
  return true;
}

Delivery make_delivery(proto::Delivery& wire) {
  Delivery delivery{
      0, std::move(wire.key), wire.stream_seq, wire.deliveries, std::move(wire.headers), std::move(wire.payload)};
  delivery.subject = std::move(wire.subject);
  delivery.server_deliveries = wire.server_deliveries;
  if (!wire.traceparent.empty()) delivery.traceparent = std::move(wire.traceparent);
  if (wire.published_ns != 0) {
    delivery.published = std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::nanoseconds(wire.published_ns)));
  }
  return delivery;
}

}  // namespace

// --- Delivery

Headers Delivery::header_list() const { return parse_headers(headers); }

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

HandlerClient::State::Read HandlerClient::State::read_frame(proto::Frame& frame, int& error, int wake_fd) {
  for (;;) {
    std::string_view input(in.data() + in_begin, in_end - in_begin);
    const auto result = parser.parse(input, frame);
    in_begin = in_end - input.size();
    if (result == proto::DeliveryParser::Result::kFrame) return Read::kFrame;
    if (result == proto::DeliveryParser::Result::kError) {
      drop_connection("", false);  // the stream is unusable; what waits on it fails now
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
      if (unix_socket::wait(fd.get(), POLLIN, wake_fd, -1) == unix_socket::Woken::kWake) {
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
    accepting = false;  // until READY says which version this connection speaks
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
    const Read read = read_frame(frame, error, wake.get());
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
        accepting = true;
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
  std::size_t unanswered = 0;
  {
    std::lock_guard lock(mutex);
    lost = unconfirmed.size();
    unanswered = publishes.size();
    unconfirmed.clear();
    out.clear();
    fd.reset();
    accepting = false;
    broken = false;
  }
  early.clear();  // they were in `unconfirmed`: redelivered
  fail_publishes("connection-lost", "the connection to jetfan ended before it answered" +
                                        (why.empty() ? std::string() : " (" + why + ")") + "; it may have been stored");
  unconfirmed_shrank.notify_all();
  connected = false;
  if (announce) {
    log("lost the connection to jetfan at " + socket_path + " (" + why + "); jetfan redelivers the " +
        std::to_string(lost) + " deliveries it had unconfirmed; " +
        (unanswered ? std::to_string(unanswered) + " publishes unanswered failed as connection-lost; " : "") +
        (options.reconnect ? "reconnecting" : "not reconnecting"));
  }
}

void HandlerClient::State::fail_publishes(const std::string& code, const std::string& reason) {
  std::unordered_map<std::uint64_t, Publish> failed;
  {
    std::lock_guard lock(mutex);
    failed.swap(publishes);
  }
  if (failed.empty()) return;
  for (auto& [id, publish] : failed) publish.promise.set_exception(std::make_exception_ptr(PublishError(code, reason)));
  note_event();
}

void HandlerClient::State::note_event() {
  {
    std::lock_guard lock(mutex);
    ++events;
  }
  reader_event.notify_all();
}

HandlerClient::State::Step HandlerClient::State::step(int wake_fd, std::optional<Delivery>& delivery) {
  proto::Frame frame;
  int error = 0;
  switch (read_frame(frame, error, wake_fd)) {
    case Read::kStopped:
      return Step::kWoken;
    case Read::kClosed:
      drop_connection("jetfan closed it", true);
      return Step::kLost;
    case Read::kFailed: {
      const std::string why = "reading failed: " + errno_text(error);
      drop_connection(why, true);
      if (!options.reconnect) throw ClientError(ClientError::Kind::kIo, "jetfan at " + socket_path + ": " + why);
      return Step::kLost;
    }
    case Read::kFrame:
      break;
  }
  switch (frame.kind) {
    case proto::Frame::Kind::kMsg: {
      delivery = make_delivery(frame.delivery);
      std::lock_guard lock(mutex);
      delivery->id = next_id++;
      unconfirmed.emplace(delivery->id, Unconfirmed{frame.delivery.id});
      return Step::kDelivery;
    }
    case proto::Frame::Kind::kPing: {
      std::lock_guard lock(mutex);
      proto::append_pong(out);  // written before the next wait for input
      return Step::kHandled;
    }
    case proto::Frame::Kind::kPong:
      return Step::kHandled;
    case proto::Frame::Kind::kErr:
      drop_connection("", false);
      throw ClientError(ClientError::Kind::kRefused,
                        "jetfan at " + socket_path + " sent ERR and closed the connection: " + frame.error,
                        frame.error);
    case proto::Frame::Kind::kReady:
      drop_connection("", false);
      throw ClientError(ClientError::Kind::kProtocol, "jetfan at " + socket_path + " sent a second READY");
    case proto::Frame::Kind::kPubOk:
    case proto::Frame::Kind::kPubErr:
      break;
  }
  const auto& answer = frame.publish;
  const bool stored = frame.kind == proto::Frame::Kind::kPubOk;
  std::optional<Publish> answered;
  {
    std::lock_guard lock(mutex);
    if (const auto found = publishes.find(answer.id); found != publishes.end()) {
      answered = std::move(found->second);
      publishes.erase(found);
      // jetfan makes the delivery's ACK a failure; the client's NAK says why (and does not depend
      // on that).
      if (!stored && answered->tied_to) {
        const auto tie = unconfirmed.find(*answered->tied_to);
        if (tie != unconfirmed.end() && tie->second.failed_tie.empty()) {
          tie->second.failed_tie =
              "tied publish failed: " + answer.code + (answer.reason.empty() ? "" : " " + answer.reason);
        }
      }
    }
  }
  if (!answered) {
    drop_connection("", false);
    throw ClientError(ClientError::Kind::kProtocol, "jetfan at " + socket_path + " answered a PUB (request " +
                                                        std::to_string(answer.id) + ") this client never sent");
  }
  if (stored) {
    answered->promise.set_value(Published{answer.stream, answer.seq, answer.duplicate});
  } else {
    answered->promise.set_exception(std::make_exception_ptr(PublishError(answer.code, answer.reason)));
  }
  note_event();
  return Step::kHandled;
}

std::optional<Delivery> HandlerClient::State::next() {
  ReadTurn turn(*this);
  reader_thread = std::this_thread::get_id();
  // What a wait() read on our behalf comes first: an error, then the deliveries, in order.
  if (pending_error) std::rethrow_exception(std::exchange(pending_error, nullptr));
  for (;;) {
    if (stopping) {
      for (const auto& unstarted : early) nak_unstarted(unstarted);
      early.clear();
      return std::nullopt;
    }
    if (!early.empty()) {
      Delivery delivery = std::move(early.front());
      early.pop_front();
      return delivery;
    }
    if (!connected) {
      if (!options.reconnect || !connect(false)) return std::nullopt;
    }
    std::optional<Delivery> delivery;
    switch (step(wake.get(), delivery)) {
      case Step::kDelivery:
        return delivery;
      case Step::kWoken:
        return std::nullopt;
      case Step::kHandled:
      case Step::kLost:
        break;
    }
  }
}

void HandlerClient::State::read_for_wait() {
  if (!connected) return;
  std::optional<Delivery> delivery;
  try {
    // No wake-up: stop() does not end a wait(), which jetfan's answer (or the connection's end) does.
    if (step(-1, delivery) != Step::kDelivery) return;
  } catch (const ClientError&) {
    pending_error = std::current_exception();  // the connection is dropped: the publishes have failed
    return;
  }
  if (stopping) {
    nak_unstarted(*delivery);
  } else {
    early.push_back(std::move(*delivery));
  }
}

void HandlerClient::State::nak_unstarted(const Delivery& delivery) {
  confirm(delivery.id, proto::Verb::kNak, std::nullopt, {});
}

bool HandlerClient::State::confirm(std::uint64_t id, proto::Verb verb, std::optional<std::uint64_t> delay_ms,
                                   std::string_view reason) {
  std::unique_lock lock(mutex);
  const auto found = unconfirmed.find(id);
  if (found == unconfirmed.end()) return false;
  const std::uint64_t wire = found->second.wire;
  std::string acked_as_nak;  // a tied publish failed: its ACK goes as a NAK saying why
  if (verb == proto::Verb::kAck && !found->second.failed_tie.empty()) {
    acked_as_nak = std::move(found->second.failed_tie);
    verb = proto::Verb::kNak;
    reason = acked_as_nak;
  }
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
  if (!acked_as_nak.empty()) log("delivery " + std::to_string(id) + " acked, sent as NAK: " + acked_as_nak);
  return true;
}

std::future<Published> HandlerClient::State::publish(std::optional<std::uint64_t> tied_to,
                                                     std::optional<std::uint32_t> index, std::string_view subject,
                                                     std::string_view payload, const Headers& headers) {
  std::promise<Published> promise;
  auto future = promise.get_future();
  std::string block, code, reason;
  {
    std::unique_lock lock(mutex);
    Unconfirmed* tie = nullptr;
    if (tied_to) {
      const auto found = unconfirmed.find(*tied_to);
      if (found != unconfirmed.end()) tie = &found->second;
    }
    // What jetfan would refuse, or cannot be sent at all, fails here, unsent.
    if (tied_to && !tie) {
      code = "not-in-flight";
      reason = "delivery " + std::to_string(*tied_to) + " is not unconfirmed on the current connection";
    } else if (!fd || !accepting) {
      code = "not-connected";
      reason = "no connection to jetfan at " + socket_path + " (reconnecting)";
    } else if (ready.version < proto::kVersion3) {
      code = "unsupported";
      reason = "this connection speaks protocol version " + std::to_string(ready.version) +
               ", and publishing takes version 3 (a jetfan that speaks it, and ClientOptions::protocol_version 3)";
    } else if (!proto::is_publish_subject(subject)) {
      code = "bad-subject";
      reason = "\"" + printable(subject) +
               "\" is not a subject to publish to (an empty token, a wildcard, a blank or a control byte)";
    } else if (!header_block(headers, block, reason)) {
      code = "bad-headers";
    } else if (block.size() + payload.size() > proto::kMaxBody) {
      code = "too-large";
      reason = std::to_string(block.size() + payload.size()) + " bytes is more than the protocol's 64 MiB";
    }
    if (code.empty()) {
      const std::uint64_t request = next_request;
      const std::uint64_t tie_index = tie ? index.value_or(tie->next_index) : 0;
      const std::size_t start = out.size();
      proto::append_pub(out, request, subject, block, payload,
                        tie ? std::optional<std::uint64_t>(tie->wire) : std::nullopt, tie_index);
      if (out.find('\n', start) + 1 - start <= proto::kMaxCommandLine) {
        ++next_request;
        if (tie) tie->next_index = std::max(tie->next_index, tie_index + 1);
        publishes.emplace(request, Publish{std::move(promise), tied_to});
        // As for confirmations: the reading thread's go out before it waits, anyone else's now.
        if (reader_waiting || reader_thread.load() != std::this_thread::get_id()) write_out_locked();
        lock.unlock();
        unconfirmed_shrank.notify_all();  // run() reads on while a publish waits for its answer
        return future;
      }
      out.resize(start);
      code = "bad-subject";
      reason = "a subject of " + std::to_string(subject.size()) + " bytes makes the PUB line longer than " +
               std::to_string(proto::kMaxCommandLine) + " bytes";
    }
    if (tie && tie->failed_tie.empty()) tie->failed_tie = "tied publish not sent: " + code + " " + reason;
  }
  promise.set_exception(std::make_exception_ptr(PublishError(code, reason)));
  return future;
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
  while (!stopping && fd && unconfirmed.size() >= limit && publishes.empty()) {
    // stop() may come from a signal handler, which cannot notify: look again now and then.
    unconfirmed_shrank.wait_for(lock, std::chrono::milliseconds(100));
  }
}

// --- HandlerClient

HandlerClient::HandlerClient(std::string socket_path, std::string handler, ClientOptions options)
    : state_(std::make_unique<State>(std::move(socket_path), std::move(handler), std::move(options))) {
  state_->connect(true);
}

HandlerClient::~HandlerClient() {
  state_->fail_publishes("connection-lost", "the client was destroyed before jetfan answered; it may have been stored");
}

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

std::future<Published> HandlerClient::publish(std::string_view subject, std::string_view payload,
                                              const Headers& headers) {
  return state_->publish(std::nullopt, std::nullopt, subject, payload, headers);
}

std::future<Published> HandlerClient::publish(const Delivery& delivery, std::string_view subject,
                                              std::string_view payload, const Headers& headers,
                                              std::optional<std::uint32_t> index) {
  return state_->publish(delivery.id, index, subject, payload, headers);
}

Published HandlerClient::wait(std::future<Published> published) {
  State& state = *state_;
  for (;;) {
    std::uint64_t seen = 0;
    {
      std::lock_guard lock(state.mutex);
      seen = state.events;
    }
    if (published.wait_for(std::chrono::seconds(0)) == std::future_status::ready) return published.get();
    {
      // No one reads: this thread does, a frame at a time, looking at its future in between.
      State::ReadTurn turn(state, std::try_to_lock);
      if (turn.owns()) {
        // Not connected: every publish has its answer already (a lost connection failed them).
        if (!state.connected) return published.get();
        state.read_for_wait();
        continue;
      }
    }
    // Someone reads: wait for an answer, or for the reader to let go.
    std::unique_lock lock(state.mutex);
    state.reader_event.wait(lock, [&] { return state.events != seen; });
  }
}

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
