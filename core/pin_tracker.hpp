#pragma once
// PinTracker: jetfan's side of a consumer's `pinned_client` priority group (nats-server 2.12.12+,
// 2.14.3+). The server gives the consumer's messages to one client, the pinned one, and moves the
// pin when that client stops pulling; every other reader waits as a hot standby. Facts and
// measurements: docs/OPERATING.md, "Failover". Pure: no I/O, no clock.
//
// Roles and what moves them:
//   kStandby   no pin: pulls name the group and no id, and wait at the server. What jetfan held
//              was handed back when it became standby; nothing new is dispatched.
//   kActive    pinned: pulls carry the pin id. A keep-alive pull (batch 1, max_bytes 1) goes out
//              when no pull has carried the id for priority_timeout / 3, so a full jetfan keeps its
//              pin (only a new pull with the id resets the server's pin timer).
//   kRepinning active, but the id was dropped after a possible consumer leader change (the new
//              leader has no pin): pulls go at once without an id, so jetfan, pulling first, is
//              pinned again (sticky). A delivery with a new Nats-Pin-Id makes it active again; none
//              within kRepinWait makes it standby (the server pins a client only when it delivers,
//              so an idle consumer pins nobody; standing by then costs nothing).
// The pin moved when the server refuses a pull's id (423); jetfan learns it at its next pull or
// delivery, so it keeps pulling (requests expire every consumer.pull_expires) while active.
// Gaining the pin (standby -> active) is where the caller runs its restart hold: what the former
// owner left unacked comes to jetfan after AckWait, and order per key must wait for it.
//
// Thread: one owner (the dispatcher's io thread).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "time.hpp"

namespace jetfan {

struct PinSettings {
  std::string group;             // the consumer's one priority group
  Duration priority_timeout{0};  // how long the server keeps a pin without a new pull carrying it
};

class PinTracker {
 public:
  enum class Role { kStandby, kActive, kRepinning };
  enum class Change { kNone, kGained, kLost };
  // How long a standby waits after a leader change before pulling again, so that the former owner,
  // pulling at once, is pinned again (measured: 0 of 12 failovers with it, 12 of 12 without).
  static constexpr Duration kStandbyWait{1000};
  // How long a re-pinning owner waits for its new pin before it takes itself for a standby.
  static constexpr Duration kRepinWait{3000};

  explicit PinTracker(PinSettings settings) : settings_(std::move(settings)) {}

  const std::string& group() const { return settings_.group; }
  // The id a pull carries now; empty: none.
  const std::string& pin_id() const { return pin_id_; }
  Role role() const { return role_; }
  bool active() const { return role_ != Role::kStandby; }

  // A message arrived carrying `pin_id` (its Nats-Pin-Id header; empty when it had none).
  Change on_message(std::string_view pin_id, TimePoint now);
  // The server refused a pull's id (423: Nats-Pin-Id mismatch, Nats-Wrong-Pin-Id): the pin moved.
  Change on_refused(TimePoint now);
  // The consumer's leader may have changed (409 Leadership Change, a probe after silence).
  void on_leader_change(TimePoint now);
  // jetfan step-down: gives the pin up and does not pull for `hold`, so that a standby takes it.
  Change step_down(TimePoint now, Duration hold);
  // The id jetfan last gave up (a step-down, a lost pin); deliveries carrying it are no new pin.
  const std::string& given_up() const { return given_up_; }
  // A standby declines a pin the server gave it (`pin_id`): deliveries carrying it are no new pin.
  void give_up(std::string_view pin_id) { given_up_.assign(pin_id); }
  // Time passes: a re-pin that did not come is a lost pin.
  Change tick(TimePoint now);

  // Whether pull requests may go out now, and if not, from when.
  bool may_pull(TimePoint now) const { return !quiet_until_ || now >= *quiet_until_; }
  std::optional<TimePoint> quiet_until() const { return quiet_until_; }
  // A pull carrying the id went out.
  void pulled(TimePoint now) { last_pull_with_id_ = now; }
  // When a keep-alive pull is due: active with an id, and none went out for priority_timeout / 3.
  std::optional<TimePoint> keepalive_due() const;
  // The next time tick() or a keep-alive has something to do.
  std::optional<TimePoint> next_wakeup() const;

  std::uint64_t gained() const { return gained_; }
  std::uint64_t lost() const { return lost_; }

 private:
  Change lose(TimePoint now);

  PinSettings settings_;
  Role role_ = Role::kStandby;
  std::string pin_id_;
  std::string given_up_;  // the last id jetfan held, once it lost or gave up the pin
  std::optional<TimePoint> quiet_until_;
  std::optional<TimePoint> repin_by_;
  std::optional<TimePoint> last_pull_with_id_;
  std::uint64_t gained_ = 0, lost_ = 0;
};

const char* to_string(PinTracker::Role role);

}  // namespace jetfan
