#include "nats_event_loop.hpp"
#include "logging.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/ioctl.h>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>

#include <atomic>
#include <cstdint>
#include <thread>
#include <utility>

#include "unique_fd.hpp"

namespace jetfan {
namespace asio = boost::asio;

namespace {
constexpr int kMaxReadsPerEvent = 16;  // 512 KiB at most, then other handlers get their turn
}  // namespace

// cnats holds a raw pointer to this (as the loop, then as the user data) from install() until
// detach; the NatsEventLoop that owns it outlives the connection (JetStreamReader closes the
// connection first). Handlers posted for it hold a reference, so it outlives them too.
struct NatsEventLoop::State : std::enable_shared_from_this<State> {
  explicit State(asio::io_context& context) : io(context), descriptor(context) {}
  ~State() { release_descriptor(); }
  State(const State&) = delete;
  State& operator=(const State&) = delete;

  asio::io_context& io;
  // Written by cnats's callbacks on any thread (under the connection's lock), read on the io thread.
  std::atomic<natsConnection*> connection{nullptr};  // from attach until detach
  std::atomic<int> fd{-1};
  std::atomic<bool> want_read{false};
  std::atomic<bool> want_write{false};    // cnats has bytes buffered for the socket
  std::atomic<bool> write_posted{false};  // a try_write is queued
  // The io thread's only.
  asio::posix::stream_descriptor descriptor;  // over jetfan's duplicate of cnats's socket
  std::uint64_t generation = 0;               // bumped when `descriptor` changes: older waits are stale
  bool read_armed = false;
  bool write_armed = false;
  bool broken_read = false;  // see take_broken_read()
  std::function<void()> after_read;

  template <typename Fn>
  void post(Fn fn) {
    asio::post(io, [self = shared_from_this(), fn = std::move(fn)] { fn(*self); });
  }

  // A new socket (connect or reconnect): poll it instead of the last one. `copy` is jetfan's own
  // descriptor of it (see on_attach). Attaches and detaches are posted in the order cnats made
  // them, so the last one run leaves the right socket polled.
  void adopt(UniqueFd copy) {
    release_descriptor();
    if (connection.load() == nullptr) return;  // detached meanwhile: `copy` closes here
    boost::system::error_code error;
    descriptor.assign(copy.get(), error);
    if (error) {
      log_error("nats.poll_failed", {{"reason", error.message()}}, "nats: cannot poll the server's socket: {}",
                error.message());
      return;
    }
    copy.release();  // the descriptor owns it now
    arm_read();
    if (want_write) try_write();
  }

  void release_descriptor() {
    ++generation;
    read_armed = false;
    write_armed = false;
    boost::system::error_code ignored;
    if (descriptor.is_open()) descriptor.close(ignored);  // jetfan's copy: the socket stays cnats's
  }

  void arm_read() {
    if (read_armed || !want_read || !descriptor.is_open()) return;
    read_armed = true;
    descriptor.async_wait(asio::posix::stream_descriptor::wait_read,
                          [self = shared_from_this(), at = generation](const boost::system::error_code& error) {
                            self->on_readable(at, error);
                          });
  }

  void on_readable(std::uint64_t at, const boost::system::error_code& error) {
    if (at != generation) return;
    read_armed = false;
    if (error) {
      if (error != asio::error::operation_aborted) {
        log_error("nats.poll_failed", {{"reason", error.message()}}, "nats: polling the socket: {}", error.message());
      }
      return;
    }
    natsConnection* nc = connection.load();
    if (nc == nullptr || !want_read) return;
    // cnats reads at most 32 KiB per event (two 16 KiB messages): while more is waiting, read on
    // before handing over, rather than go back to the reactor for each 32 KiB.
    const int socket = descriptor.native_handle();
    int waiting = 0;
    ::ioctl(socket, FIONREAD, &waiting);
    for (int reads = 0; reads < kMaxReadsPerEvent; ++reads) {
      natsConnection_ProcessReadEvent(nc);
      if (!want_read && waiting > 0) broken_read = true;  // dropped while reading what was there
      waiting = 0;
      if (!want_read || connection.load() != nc || ::ioctl(socket, FIONREAD, &waiting) != 0 || waiting <= 0) break;
    }
    if (after_read) after_read();  // may close the connection (and release the descriptor)
    arm_read();
  }

  // Writes now what cnats buffered (the socket is most often writable); waits for the socket only
  // when cnats could not write it all.
  void try_write() {
    natsConnection* nc = connection.load();
    if (nc == nullptr || !want_write) return;
    natsConnection_ProcessWriteEvent(nc);  // asks to remove the write event once all is written
    if (!want_write || write_armed || !descriptor.is_open()) return;
    write_armed = true;
    descriptor.async_wait(asio::posix::stream_descriptor::wait_write,
                          [self = shared_from_this(), at = generation](const boost::system::error_code& error) {
                            if (at != self->generation) return;
                            self->write_armed = false;
                            if (!error) self->try_write();
                          });
  }

  void schedule_write() {
    if (write_posted.exchange(true)) return;
    post([](State& self) {
      self.write_posted = false;
      self.try_write();
    });
  }
};

namespace {

using State = NatsEventLoop::State;

// cnats's callbacks. Each runs under the connection's lock, on whichever thread cnats is on: they
// record the request and leave all work to the io thread.
natsStatus on_attach(void** user_data, void* loop, natsConnection* nc, natsSock socket) {
  auto* state = static_cast<State*>(loop);
  // cnats closes its socket on its own thread when the connection drops, before the io thread
  // hears of it; a socket jetfan accepts next may get that number. Polling a duplicate keeps the
  // reactor off whatever the number means by then: removing cnats's closed socket from epoll once
  // removed a handler's socket instead, whose ACKs then went unread.
  UniqueFd copy(::fcntl(socket, F_DUPFD_CLOEXEC, 0));
  if (!copy) return NATS_SYS_ERROR;
  *user_data = state;
  state->connection = nc;
  state->fd = socket;
  state->want_read = true;
  state->post([copy = std::make_shared<UniqueFd>(std::move(copy))](State& self) { self.adopt(std::move(*copy)); });
  return NATS_OK;
}

natsStatus on_read_request(void* user_data, bool add) {
  auto* state = static_cast<State*>(user_data);
  state->want_read = add;
  if (add) state->post([](State& self) { self.arm_read(); });
  return NATS_OK;
}

natsStatus on_write_request(void* user_data, bool add) {
  auto* state = static_cast<State*>(user_data);
  state->want_write = add;
  if (add) state->schedule_write();
  return NATS_OK;
}

natsStatus on_detach(void* user_data) {
  auto* state = static_cast<State*>(user_data);
  state->connection = nullptr;
  state->fd = -1;
  state->want_read = false;
  state->want_write = false;
  state->post([](State& self) { self.release_descriptor(); });
  return NATS_OK;
}

}  // namespace

NatsEventLoop::NatsEventLoop(asio::io_context& io) : state_(std::make_shared<State>(io)) {}

NatsEventLoop::~NatsEventLoop() { state_->release_descriptor(); }

natsStatus NatsEventLoop::install(natsOptions* options) {
  natsStatus status =
      natsOptions_SetEventLoop(options, state_.get(), on_attach, on_read_request, on_write_request, on_detach);
  if (status == NATS_OK) status = natsOptions_SetSendAsap(options, true);
  return status;
}

void NatsEventLoop::on_read(std::function<void()> after_read) { state_->after_read = std::move(after_read); }

void NatsEventLoop::drive_until(const std::function<bool()>& done, std::chrono::steady_clock::time_point deadline) {
  State& s = *state_;
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    natsConnection* nc = s.connection.load();
    const int fd = s.fd.load();
    const short events = static_cast<short>((s.want_read ? POLLIN : 0) | (s.want_write ? POLLOUT : 0));
    if (nc == nullptr || fd < 0 || events == 0) {  // reconnecting, or nothing to do yet
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    pollfd ready{fd, events, 0};
    if (::poll(&ready, 1, 1) <= 0) continue;  // 1 ms: the waiting thread may ask to write meanwhile
    if ((ready.revents & POLLOUT) && s.want_write) natsConnection_ProcessWriteEvent(nc);
    if ((ready.revents & (POLLIN | POLLHUP | POLLERR)) && s.want_read) natsConnection_ProcessReadEvent(nc);
  }
}

bool NatsEventLoop::take_broken_read() { return std::exchange(state_->broken_read, false); }

void NatsEventLoop::shutdown() { state_->release_descriptor(); }

}  // namespace jetfan
