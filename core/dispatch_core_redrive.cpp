// DispatchCore and its RedriveTable (redrive_table.hpp): redrives, dead letters given back to one
// handler (docs/dispatch-rules.md R41-R43). A redrive is held like a message of the stream, under a
// key of its own, so dispatch, confirmations, ack_timeout, the retry budget and dead letters serve it
// unchanged; what differs is how it ends: never at the server, always with kRedriveSettled or
// kRedriveDropped.

#include <cassert>

#include "dispatch_core.hpp"

namespace jetfan {

bool DispatchCore::redrive(const Redrive& redrive, TimePoint now) {
  if (stepping_aside() || redrive.handler >= handlers_.size() || !RedriveTable::valid_id(redrive.id)) return false;
  const std::uint64_t key = RedriveTable::key_of(redrive.id);
  if (messages_.count(key) != 0) return false;
  const HandlerMask bit = HandlerMask{1} << redrive.handler;
  if (!next_keepalive_) next_keepalive_ = now + settings_.keepalive;
  Message message;
  message.handle = redrive.message;
  message.recipients = bit;
  message.queued = bit;
  message.touched = now;
  message.arrived = now;
  if (redrive.order_key) {
    // Its sequence is above every stream sequence: it waits for what the handler owes of its key.
    gate_.add(redrive.handler, *redrive.order_key, key);
    message.ordered = bit;
  }
  messages_.emplace(key, message);
  redrives_.add(redrive.id);
  handlers_[redrive.handler].queue.push_back(key);
  dispatch(redrive.handler, now);
  return true;
}

void DispatchCore::finish_redrive(std::uint64_t key, Message& message, TimePoint now) {
  // ACKed, or dead-lettered again (stored): settled. A TERM without a dead letter (a reload took
  // them away) would lose it, so that, a removed handler and a drain keep the old dead letter.
  const bool settled =
      message.recipients != 0 && (message.settled & message.recipients) == message.recipients && message.termed == 0;
  const bool over = settled || message.recipients == 0 || message.termed != 0 || stepping_aside();
  if (!over) {
    const HandlerMask fresh = message.failed & ~message.retrying;
    if (fresh == 0) return;  // queued, gated, or waiting for its retry
    // It cannot go back to the server: it goes to the handler again after the failure's delay.
    for (std::size_t h = 0; h < handlers_.size(); ++h) {
      const HandlerMask bit = HandlerMask{1} << h;
      if (!(fresh & bit)) continue;
      message.retrying |= bit;
      retries_.schedule(now + message.nak_delay, h, key);
    }
    return;
  }
  const std::optional<RedriveTable::Entry> state = redrives_.take(key);
  assert(state);
  Effect effect{settled ? Effect::Kind::kRedriveSettled : Effect::Kind::kRedriveDropped, message.handle};
  effect.redrive = state->id;
  effect.again = state->again;
  for (std::size_t h = 0; h < handlers_.size(); ++h) {
    if (message.recipients & (HandlerMask{1} << h)) effect.handler = h;
  }
  const MessageHandle handle = message.handle;
  std::vector<std::size_t> released;
  if (message.ordered & ~message.settled) {
    for (const auto& [handler, next] : gate_.forget(key)) {
      order_release(handler, next);
      released.push_back(handler);
    }
  }
  messages_.erase(key);
  budget_.forget(key);
  effects_.push_back(effect);
  emit(Effect::Kind::kRelease, handle);
  for (const std::size_t handler : released) {
    if (handler < handlers_.size()) dispatch(handler, now);
  }
}

}  // namespace jetfan
