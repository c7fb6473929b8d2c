#include "pull_ledger.hpp"

#include <algorithm>
#include <cassert>

namespace jetfan {

PullLedger::PullLedger(PullSettings settings) : settings_(settings) {
  assert(settings_.batch > 0 && settings_.max_held > 0);
}

void PullLedger::top_up(std::size_t held, std::uint64_t held_bytes, TimePoint now, std::vector<PullRequest>& out) {
  if (!pulling_) return;
  const std::uint64_t budget = settings_.max_held_bytes;
  while (requested_ < settings_.batch && held + requested_ < settings_.max_held) {
    std::size_t count = std::min(settings_.batch, settings_.max_held - held - requested_);
    if (count < settings_.batch && requested_ > 0) return;
    std::uint64_t max_bytes = 0;
    if (budget > 0) {
      const std::uint64_t room = room_bytes(held_bytes);
      if (too_big_for_) {
        // The next message did not fit in a request of too_big_for_ bytes: ask again only with
        // more room than that, all of it. Alone, with nothing held, is the last resort.
        if (room > *too_big_for_) {
          max_bytes = room;
        } else {
          if (held > 0 || held_bytes > 0 || !pulls_.empty()) return;
          count = 1;
          max_bytes = 0;
        }
      } else {
        // Half the budget a request: the next one can go out while the first is answered.
        max_bytes = std::min(room, std::max<std::uint64_t>(budget / 2, 1));
        if (max_bytes == 0) return;
      }
      too_big_for_.reset();
    }
    // The server's heartbeats start with the first request that waits; silence is measured from it.
    if (pulls_.empty()) last_heard_ = now;
    const std::uint64_t id = next_id_++;
    pulls_.emplace(id, Pull{count, max_bytes, max_bytes, now + settings_.expires});
    requested_ += count;
    requested_bytes_ += max_bytes;
    out.push_back(PullRequest{id, count, max_bytes, settings_.expires, settings_.idle_heartbeat});
    if (max_bytes == 0 && budget > 0) return;  // alone
  }
}

void PullLedger::cancel(std::uint64_t id) {
  if (auto found = pulls_.find(id); found != pulls_.end()) retire(found);
}

void PullLedger::retire(std::map<std::uint64_t, Pull>::iterator pull) {
  requested_ -= pull->second.remaining;
  requested_bytes_ -= pull->second.remaining_bytes;
  pulls_.erase(pull);
}

void PullLedger::on_message(TimePoint now, std::uint64_t bytes) {
  last_heard_ = now;
  auto oldest = pulls_.begin();
  if (oldest == pulls_.end()) return;  // answers a request dropped after a reconnect
  --requested_;
  const std::uint64_t charged = std::min(bytes, oldest->second.remaining_bytes);
  oldest->second.remaining_bytes -= charged;
  requested_bytes_ -= charged;
  if (--oldest->second.remaining == 0) retire(oldest);
}

PullLedger::StatusOutcome PullLedger::on_status(std::uint64_t id, std::string_view code, std::string_view description,
                                                TimePoint now) {
  last_heard_ = now;
  if (code == "100") return StatusOutcome::kAlive;
  // Sent once a request with max_bytes has had its whole batch (nats-server 2.10 and later). On a
  // replicated consumer it can overtake the request's last messages, so the request is not retired
  // here: what it still has coming stays charged to it, and on_message retires it as usual.
  if (code == "409" && description.starts_with("Batch Completed")) return StatusOutcome::kFinished;
  const bool too_big = code == "409" && description.find("Exceeds MaxBytes") != std::string_view::npos;
  if (auto found = pulls_.find(id); found != pulls_.end()) {
    if (too_big) too_big_for_ = std::max(too_big_for_.value_or(0), found->second.max_bytes);
    retire(found);
  }
  if (too_big) return StatusOutcome::kFinished;
  // Every server version since JetStream's pull API says it this way (2.9 to 2.12 alike).
  if (code == "409" && description.find("Consumer Deleted") != std::string_view::npos) {
    return StatusOutcome::kConsumerDeleted;
  }
  // 423: a pinned_client group's pin is another's (core/PinTracker acts on it): the request is over.
  return code == "404" || code == "408" || code == "423" ? StatusOutcome::kFinished : StatusOutcome::kUnexpected;
}

void PullLedger::drop_all(TimePoint now) {
  for (const auto& [id, pull] : pulls_) {
    if (!dropped_until_ || *dropped_until_ < pull.expires) dropped_until_ = pull.expires;
  }
  pulls_.clear();
  requested_ = 0;
  requested_bytes_ = 0;
  last_heard_ = now;
}

void PullLedger::on_reconnect(TimePoint now) { drop_all(now); }

PullLedger::Liveness PullLedger::check_liveness(TimePoint now) {
  if (pulls_.empty()) return Liveness::kFine;
  if (now - last_heard_ > kMissedHeartbeats * settings_.idle_heartbeat) {
    drop_all(now);
    return Liveness::kSilent;
  }
  for (auto it = pulls_.begin(); it != pulls_.end();) {
    auto next = std::next(it);
    if (it->second.expires + kExpiryGrace < now) retire(it);
    it = next;
  }
  return Liveness::kFine;
}

void PullLedger::on_leader_unsure(TimePoint now) {
  if (!probing_) {
    next_probe_ = now;
    probe_interval_ = kProbeInterval;
  }
  probing_ = true;
}

std::optional<std::uint64_t> PullLedger::take_probe(TimePoint now) {
  if (!probing_ || now < next_probe_) return std::nullopt;
  next_probe_ = now + probe_interval_;
  probe_interval_ = std::min(probe_interval_ * 2, kProbeIntervalMax);
  return next_probe_id_++;
}

std::optional<TimePoint> PullLedger::next_probe() const {
  if (!probing_) return std::nullopt;
  return next_probe_;
}

bool PullLedger::on_probe_answer(bool ok, TimePoint now) {
  if (!probing_ || !ok) return false;
  probing_ = false;
  // Requests sent while the leader was unsure may have gone nowhere: pull anew.
  drop_all(now);
  return true;
}

Duration PullLedger::handback_delay(TimePoint now) const {
  std::optional<TimePoint> latest = dropped_until_;
  for (const auto& [id, pull] : pulls_) {
    if (!latest || *latest < pull.expires) latest = pull.expires;
  }
  if (!latest || *latest + kHandbackMargin <= now) return Duration(0);
  return std::chrono::ceil<Duration>(*latest + kHandbackMargin - now);
}

}  // namespace jetfan
