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
  outstanding.wall_ns = time_.wall_now_ns();
  // From then on the server can show it sent them again (dispatch_core.hpp).
  const auto proof_ms = (settings_.core.nak_delay_max + gap_hold(settings_.core.keepalive)).count();
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
             "settle them too, so nothing is acked until they came back or, {}ms on, the server shows it sent them "
             "again, or for at most {}ms",
             facts.ack_floor + 1, facts.delivered, facts.ack_pending, proof_ms, hold.count());
  }
  if (!core_.awaiting_outstanding()) return;
  if (outstanding.unread) {
    log_warn("order.restart_holds_all",
             {{"floor", facts.ack_floor}, {"delivered", facts.delivered}, {"pending", facts.ack_pending}},
             "order: stream seqs {} to {} may still be unacked ({} pending) and could not all be read: every "
             "ordered handler waits until they came back or, {}ms on, the server shows it sent them again, or for at "
             "most {}ms",
             facts.ack_floor + 1, facts.delivered, facts.ack_pending, proof_ms, hold.count());
    return;
  }
  log_info(
      "order.restart_waits",
      {{"floor", facts.ack_floor},
       {"delivered", facts.delivered},
       {"pending", facts.ack_pending},
       {"messages", outstanding.messages.size()}},
      "order: {} message(s) of ordered handlers in stream seqs {} to {} may still be unacked ({} pending): "
      "later messages of their keys wait until they came back or, {}ms on, the server shows it sent them again, or "
      "for at most {}ms",
      outstanding.messages.size(), facts.ack_floor + 1, facts.delivered, facts.ack_pending, proof_ms, hold.count());
}

}  // namespace jetfan

namespace jetfan {

void Dispatcher::note_gaps() {
  const CoreCounters& c = core_.counters();
  if (c.delivery_gaps != noted_gaps_) {
    const std::uint64_t lost = c.deliveries_lost - noted_lost_;
    noted_gaps_ = c.delivery_gaps;
    noted_lost_ = c.deliveries_lost;
    const Duration hold = gap_hold(settings_.core.keepalive);
    log_info("nats.deliveries_lost", {{"lost", lost}, {"above_seq", core_.gap_floor()}, {"hold_ms", hold.count()}},
             "nats: {} delivery(ies) of the consumer never arrived (a jump in its delivery numbers: a broken "
             "connection, or a leader that went); the server sends them again after AckWait, so until they are back "
             "ordered handlers get nothing above stream seq {} and, under AckPolicy all, nothing from there is acked "
             "(for at least {}ms unless all are seen back, at most {}ms)",
             lost, core_.gap_floor(), hold.count(), gap_let_go(settings_.core.keepalive).count());
    gap_noted_ = true;
  }
  if (!gap_noted_ || core_.gap_held()) return;
  gap_noted_ = false;
  if (c.gap_holds_let_go != noted_let_go_) {
    noted_let_go_ = c.gap_holds_let_go;
    log_warn("order.gap_let_go", {{"after_ms", gap_let_go(settings_.core.keepalive).count()}},
             "order: what deliveries lost on the way held back goes on after {}ms without proof that the lost ones "
             "came back (no message stored since, and no answer to a pull sent since): a later message of a key may "
             "overtake a lost one (counted in gap_holds_let_go)",
             gap_let_go(settings_.core.keepalive).count());
    return;
  }
  log_info("nats.lost_deliveries_back", {},
           "nats: what deliveries lost on the way held back goes on: the server has sent them again");
}

}  // namespace jetfan
