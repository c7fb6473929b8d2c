#include "pin_tracker.hpp"

#include <algorithm>

namespace jetfan {

const char* to_string(PinTracker::Role role) {
  switch (role) {
    case PinTracker::Role::kStandby:
      return "standby";
    case PinTracker::Role::kActive:
      return "active";
    case PinTracker::Role::kChecking:
      return "active (checking the pin)";
    case PinTracker::Role::kRepinning:
      return "active (re-pinning)";
  }
  return "?";
}

PinTracker::Change PinTracker::on_message(std::string_view pin_id, TimePoint now) {
  // Only the first delivery after the server picks a pin carries it; the rest carry nothing.
  if (pin_id.empty() || pin_id == pin_id_) return Change::kNone;
  // The id jetfan gave up still rides on deliveries to its requests that wait at the server (after a
  // step-down, until they end): no new pin, and the standby hands them back.
  if (role_ == Role::kStandby && pin_id == given_up_) return Change::kNone;
  pin_id_.assign(pin_id);
  last_pull_with_id_ = now;  // the server pinned it at this delivery: its timer starts now
  repin_by_.reset();
  check_by_.reset();
  quiet_until_.reset();
  const bool was_standby = role_ == Role::kStandby;
  role_ = Role::kActive;
  if (!was_standby) return Change::kNone;
  ++gained_;
  return Change::kGained;
}

PinTracker::Change PinTracker::lose(TimePoint now) {
  (void)now;
  if (!pin_id_.empty()) given_up_ = std::move(pin_id_);
  pin_id_.clear();
  repin_by_.reset();
  check_by_.reset();
  last_pull_with_id_.reset();
  if (role_ == Role::kStandby) return Change::kNone;
  role_ = Role::kStandby;
  ++lost_;
  return Change::kLost;
}

void PinTracker::on_refused(TimePoint now) {
  if (role_ != Role::kActive) return;
  pin_id_.clear();
  last_pull_with_id_.reset();
  role_ = Role::kChecking;
  check_by_ = now + kCheckWait;
}

PinTracker::Change PinTracker::on_pin_holder(std::string_view holder, TimePoint now) {
  if (role_ != Role::kChecking) return Change::kNone;  // pinned again or lost meanwhile
  if (!holder.empty()) return lose(now);
  repin(now);
  return Change::kNone;
}

void PinTracker::repin(TimePoint now) {
  pin_id_.clear();
  last_pull_with_id_.reset();
  check_by_.reset();
  role_ = Role::kRepinning;
  if (!repin_by_) repin_by_ = now + kRepinWait;
}

void PinTracker::on_leader_change(TimePoint now) {
  if (role_ == Role::kStandby) {
    // Let the former owner be pinned again by the new leader: one with requests waiting re-pulls at
    // once; a full one learns of the change when its next keep-alive is refused.
    quiet_until_ = std::max(quiet_until_.value_or(now), now + settings_.priority_timeout / 3 + kStandbyWait);
    return;
  }
  if (role_ == Role::kChecking) return;  // its answer decides
  repin(now);
}

PinTracker::Change PinTracker::step_down(TimePoint now, Duration hold) {
  quiet_until_ = now + hold;
  return lose(now);
}

PinTracker::Change PinTracker::tick(TimePoint now) {
  if (quiet_until_ && now >= *quiet_until_) quiet_until_.reset();
  if (role_ == Role::kChecking && check_by_ && now >= *check_by_) repin(now);
  if (role_ == Role::kRepinning && repin_by_ && now >= *repin_by_) return lose(now);
  return Change::kNone;
}

std::optional<TimePoint> PinTracker::keepalive_due() const {
  if (role_ != Role::kActive || pin_id_.empty() || !last_pull_with_id_) return std::nullopt;
  return *last_pull_with_id_ + settings_.priority_timeout / 3;
}

std::optional<TimePoint> PinTracker::next_wakeup() const {
  std::optional<TimePoint> next = keepalive_due();
  for (const auto& at : {quiet_until_, role_ == Role::kRepinning ? repin_by_ : std::nullopt,
                         role_ == Role::kChecking ? check_by_ : std::nullopt}) {
    if (at && (!next || *at < *next)) next = at;
  }
  return next;
}

}  // namespace jetfan
