// Dispatcher, continued: what an earlier reader of the consumer may have left unacked, given to the
// core before the first pull so that ordered handlers wait for it (dispatch_core.hpp).

#include <spdlog/spdlog.h>

#include <algorithm>

#include "dispatcher.hpp"
#include "jetstream_subject.hpp"
#include "order_key.hpp"

namespace jetfan {

void Dispatcher::expect_outstanding(const ConsumerFacts& facts, const std::optional<std::vector<StreamMessage>>& read) {
  JETFAN_ON_IO_THREAD(thread_);
  const TimePoint now = time_.now();
  Outstanding outstanding;
  outstanding.floor = facts.ack_floor;
  outstanding.delivered = facts.delivered;
  outstanding.pending = facts.ack_pending;
  outstanding.unread = !read.has_value();
  // A message handed back by an earlier reader comes back after its delay at the latest, one it
  // left in flight within an AckWait: as long as the core waits for one handed back itself.
  const Duration hold = order_away_hold(settings_.core.nak_delay_max, settings_.core.keepalive);
  outstanding.until = now + hold;
  if (read) {
    for (const StreamMessage& message : *read) {
      const auto key = key_of(message.subject, config_.key.strip_prefix);
      if (!key) continue;
      const HandlerMask recipients = matcher_.match(*key);
      Outstanding::Entry entry{message.stream_seq, {}};
      for (std::size_t h = 0; h < config_.handlers.size(); ++h) {
        const OrderBy& order_by = config_.handlers[h].order_by;
        if (order_by.kind == OrderBy::Kind::kNone || !(recipients & (HandlerMask{1} << h))) continue;
        if (const auto found = order_key(order_by, *key, message.headers)) {
          entry.order.push_back(OrderKey{h, std::string(*found)});
        }
      }
      if (!entry.order.empty()) outstanding.messages.push_back(std::move(entry));
    }
  }
  core_.expect_outstanding(outstanding, now);
  apply_effects();
  arm_wakeup();
  if (core_.ack_floor_held()) {
    log_info("ack_floor.restart_holds",
             {{"floor", facts.ack_floor}, {"delivered", facts.delivered}, {"pending", facts.ack_pending}},
             "ack floor: stream seqs {} to {} may still be unacked ({} pending); under AckPolicy all one +ACK would "
             "settle them too, so nothing is acked until they came back, or for at most {}ms",
             facts.ack_floor + 1, facts.delivered, facts.ack_pending, hold.count());
  }
  if (!core_.awaiting_outstanding()) return;
  if (outstanding.unread) {
    log_warn("order.restart_holds_all",
             {{"floor", facts.ack_floor}, {"delivered", facts.delivered}, {"pending", facts.ack_pending}},
             "order: stream seqs {} to {} may still be unacked ({} pending) and could not all be read: every "
             "ordered handler waits until they came back, or for at most {}ms",
             facts.ack_floor + 1, facts.delivered, facts.ack_pending, hold.count());
    return;
  }
  log_info("order.restart_waits",
           {{"floor", facts.ack_floor},
            {"delivered", facts.delivered},
            {"pending", facts.ack_pending},
            {"messages", outstanding.messages.size()}},
           "order: {} message(s) of ordered handlers in stream seqs {} to {} may still be unacked ({} pending): "
           "later messages of their keys wait until they came back, or for at most {}ms",
           outstanding.messages.size(), facts.ack_floor + 1, facts.delivered, facts.ack_pending, hold.count());
}

}  // namespace jetfan

namespace jetfan {

// A message the server sent just before a reconnect or a leader change may never have arrived; the
// server sends it again after AckWait, by when later messages of its key must not have overtaken it.
void Dispatcher::hold_ordered(TimePoint now) {
  const bool any_ordered = std::any_of(config_.handlers.begin(), config_.handlers.end(), [](const auto& handler) {
    return handler.order_by.kind != OrderBy::Kind::kNone;
  });
  if (!any_ordered) return;
  // The keepalive is a third of AckWait; four of them leave a third for the pull that brings it.
  const Duration hold = 4 * settings_.core.keepalive;
  core_.hold_ordered(now + hold);
  apply_effects();
  arm_wakeup();
  log_info("order.reconnect_holds", {{"hold_ms", hold.count()}},
           "order: the connection to the consumer broke or its leader may have changed; what the server sent just "
           "before may come back only after AckWait, so ordered handlers get nothing new for {}ms",
           hold.count());
}

// Under AckPolicy all one +ACK would also settle what the server sent just before and never arrived.
void Dispatcher::hold_ack_floor(TimePoint now) {
  if (settings_.core.ack_policy != AckPolicy::kAll) return;
  const Duration hold = 4 * settings_.core.keepalive;
  core_.hold_ack_floor(now + hold);
  apply_effects();
  arm_wakeup();
  log_info("ack_floor.reconnect_holds", {{"hold_ms", hold.count()}},
           "ack floor: the connection to the consumer broke or its leader may have changed; under AckPolicy all one "
           "+ACK would also settle what the server sent just before and may come back only after AckWait, so "
           "nothing is acked for {}ms (settled messages wait; pulling goes on)",
           hold.count());
}

}  // namespace jetfan
