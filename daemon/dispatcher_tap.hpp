#pragma once
// DispatcherTap: told every input the Dispatcher gives its DispatchCore, every list of the core's
// effects before the dispatcher applies it, and every frame the dispatcher itself answers with.
// For checkers (the session fuzzer's, the dispatcher's tests) that hold the real dispatcher to the
// core's rules (core/dispatch_checker.hpp) and to what each peer must read. Unset, it costs a null
// test per input.
//
// Thread: the io_context thread, from inside the Dispatcher. A tap must not call back into it.

#include <cstddef>
#include <span>

#include "dispatch_core.hpp"
#include "protocol.hpp"

namespace jetfan {

class DispatcherTap {
 public:
  virtual void arrived(const Arrival& arrival) = 0;
  // Right after core.connect: READY has been queued for the connection before any MSG.
  virtual void connected(ConnectionId connection, std::size_t handler) = 0;
  virtual void disconnected(ConnectionId connection) = 0;
  // A confirmation (ACK, NAK, TERM, WIP) and whether the core knew the delivery.
  virtual void answered(ConnectionId connection, const proto::Command& command, bool known) = 0;
  virtual void ponged(ConnectionId connection) = 0;
  // A PUB was answered: PUBOK when `stored`, else PUBERR, for request id `request`.
  virtual void answered_publish(ConnectionId connection, std::uint64_t request, bool stored) = 0;
  virtual void began_drain(TimePoint now, Duration handback_delay) = 0;
  virtual void abandoned_all() = 0;
  // The core stood by (a lost pin, docs/dispatch-rules.md R46) or resumed.
  virtual void stood_by(TimePoint now, bool standing, Duration handback_delay) = 0;
  virtual void effects(std::span<const Effect> effects, TimePoint now) = 0;

 protected:
  ~DispatcherTap() = default;
};

}  // namespace jetfan
