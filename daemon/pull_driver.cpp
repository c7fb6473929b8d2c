#include "pull_driver.hpp"

#include <algorithm>

#include "logging.hpp"

namespace jetfan {

PullDriver::PullDriver(const PullSettings& settings, Upstream& upstream, Timekeeper& time, ReaderHealth& health)
    : upstream_(upstream), time_(time), health_(health), ledger_(settings) {}

void PullDriver::top_up(std::size_t held_for_room, std::uint64_t bytes_held) {
  const bool wants_more = ledger_.wants_more(held_for_room);
  // Called after every input: without a group, the clock is read only when a request may go out.
  if (!wants_more && pinned_ == nullptr) return;
  const TimePoint now = time_.now();
  if (wants_more && (pinned_ == nullptr || pinned_->may_pull(now))) {
    requests_.clear();
    ledger_.top_up(held_for_room, bytes_held, now, requests_);
    for (auto& request : requests_) {
      if (pinned_) pinned_->decorate(request, now);
      if (!upstream_.send_pull(request)) ledger_.cancel(request.id);
    }
    most_open_ = std::max<std::uint64_t>(most_open_, ledger_.outstanding());
  }
  // Full while re-pinning after a leader change, jetfan would have no request at the new leader.
  if (pinned_) pinned_->claim(now, ledger_.outstanding() > 0 || ledger_.probing());
}

PullDriver::StatusHeard PullDriver::on_status(const PullStatus& status, TimePoint now) {
  if (pinned_) {
    pinned_->on_status(status, now);
    if (PinnedReader::owns_pull(status.pull)) return {};  // a keep-alive's or a claim's: no credit of the ledger's
  }
  StatusHeard heard;
  // An answer to a request sent after a gap's hold began proves what AckWait expired was sent first.
  heard.request_sent = ledger_.sent_at(status.pull);
  const auto outcome = ledger_.on_status(status.pull, status.code, status.description, now);
  if (outcome != PullLedger::StatusOutcome::kUnexpected && outcome != PullLedger::StatusOutcome::kConsumerDeleted) {
    return heard;
  }
  log_warn("nats.pull_status", {{"pull", status.pull}, {"status", status.code}, {"reason", status.description}},
           "nats: pull request {} answered with status {} ({}); pulling anew once the consumer answers", status.pull,
           status.code, status.description);
  leader_unsure(now);
  heard.consumer_deleted = outcome == PullLedger::StatusOutcome::kConsumerDeleted;
  return heard;
}

void PullDriver::on_probe_answer(bool answered, TimePoint now) {
  if (!ledger_.on_probe_answer(answered, now)) return;
  const auto unsure_ms = unsure_since_ ? std::chrono::duration_cast<Duration>(now - *unsure_since_).count() : 0;
  log_info("nats.consumer_answers", {{"unsure_ms", unsure_ms}},
           "nats: the consumer answers again ({}ms after it may have changed leader); pulling anew", unsure_ms);
  unsure_since_.reset();
}

void PullDriver::on_reconnected(TimePoint now) {
  if (ledger_.outstanding() > 0) {
    log_info("nats.pulls_dropped", {{"pulls", ledger_.outstanding()}, {"reason", "reconnected"}},
             "nats: dropping {} outstanding pull request(s): reconnected", ledger_.outstanding());
  }
  ledger_.on_reconnect(now);
  leader_unsure(now);
}

void PullDriver::check_liveness(TimePoint now) {
  if (ledger_.check_liveness(now) != PullLedger::Liveness::kSilent) return;
  log_info("nats.pulls_dropped", {{"reason", "no heartbeat"}},
           "nats: dropped the outstanding pull requests: no heartbeat from the server for {} heartbeats",
           PullLedger::kMissedHeartbeats);
  leader_unsure(now);
}

void PullDriver::leader_unsure(TimePoint now) {
  if (!unsure_since_) unsure_since_ = now;
  // What the server delivered meanwhile may not have reached jetfan: no count can be judged.
  health_.excuse();
  ledger_.on_leader_unsure(now);
  probe(now);
}

void PullDriver::probe(TimePoint now) {
  if (stopped_) return;
  if (const auto id = ledger_.take_probe(now)) upstream_.send_probe(*id);
  if (const auto next = ledger_.next_probe()) time_.set(Alarm::kProbe, *next);
}

void PullDriver::stop() {
  stopped_ = true;
  ledger_.stop();
}

std::uint64_t PullDriver::most_open() const { return std::max<std::uint64_t>(most_open_, ledger_.outstanding()); }

}  // namespace jetfan
