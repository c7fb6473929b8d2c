#include "hold_reporter.hpp"

#include "logging.hpp"

namespace jetfan {

void HoldReporter::restart_holds(const DispatchCore& core, const ConsumerFacts& facts, const Outstanding& outstanding,
                                 Duration proof_after, Duration hold) const {
  if (core.ack_floor_held()) {
    log_info("ack_floor.restart_holds",
             {{"floor", facts.ack_floor}, {"delivered", facts.delivered}, {"pending", facts.ack_pending}},
             "ack floor: stream seqs {} to {} may still be unacked ({} pending); under AckPolicy all one +ACK would "
             "settle them too, so nothing is acked until they came back or, {}ms on, the server shows it sent them "
             "again, or for at most {}ms",
             facts.ack_floor + 1, facts.delivered, facts.ack_pending, proof_after.count(), hold.count());
  }
  if (!core.awaiting_outstanding()) return;
  if (outstanding.unread) {
    log_warn("order.restart_holds_all",
             {{"floor", facts.ack_floor}, {"delivered", facts.delivered}, {"pending", facts.ack_pending}},
             "order: stream seqs {} to {} may still be unacked ({} pending) and could not all be read: every "
             "ordered handler waits until they came back or, {}ms on, the server shows it sent them again, or for at "
             "most {}ms",
             facts.ack_floor + 1, facts.delivered, facts.ack_pending, proof_after.count(), hold.count());
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
      outstanding.messages.size(), facts.ack_floor + 1, facts.delivered, facts.ack_pending, proof_after.count(),
      hold.count());
}

void HoldReporter::note(const DispatchCore& core) {
  const CoreCounters& c = core.counters();
  if (c.delivery_gaps != noted_gaps_) {
    const std::uint64_t lost = c.deliveries_lost - noted_lost_;
    noted_gaps_ = c.delivery_gaps;
    noted_lost_ = c.deliveries_lost;
    const Duration hold = gap_hold(keepalive_);
    log_info("nats.deliveries_lost", {{"lost", lost}, {"above_seq", core.gap_floor()}, {"hold_ms", hold.count()}},
             "nats: {} delivery(ies) of the consumer never arrived (a jump in its delivery numbers: a broken "
             "connection, or a leader that went); the server sends them again after AckWait, so until they are back "
             "ordered handlers get nothing above stream seq {} and, under AckPolicy all, nothing from there is acked "
             "(for at least {}ms unless all are seen back, at most {}ms)",
             lost, core.gap_floor(), hold.count(), gap_let_go(keepalive_).count());
    gap_noted_ = true;
  }
  if (!gap_noted_ || core.gap_held()) return;
  gap_noted_ = false;
  if (c.gap_holds_let_go != noted_let_go_) {
    noted_let_go_ = c.gap_holds_let_go;
    log_warn("order.gap_let_go", {{"after_ms", gap_let_go(keepalive_).count()}},
             "order: what deliveries lost on the way held back goes on after {}ms without proof that the lost ones "
             "came back (no message stored since, and no answer to a pull sent since): a later message of a key may "
             "overtake a lost one (counted in gap_holds_let_go)",
             gap_let_go(keepalive_).count());
    return;
  }
  log_info("nats.lost_deliveries_back", {},
           "nats: what deliveries lost on the way held back goes on: the server has sent them again");
}

}  // namespace jetfan
