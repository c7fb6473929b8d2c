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
//   kChecking  active, but the server refused the id (423). Either the pin moved to another client,
//              or a new consumer leader holds no pin and refuses every id (measured on 2.15.1; a
//              full jetfan whose keep-alive was not waiting at the old leader learns of the change
//              only so). No pull goes out; the caller asks the consumer whom the group is pinned to
//              (on_pin_holder): another client, and jetfan lost the pin; no one, and it re-pins. No
//              answer within kCheckWait: it re-pins.
//   kRepinning active, but the id was dropped after a possible consumer leader change (the new
//              leader has no pin): pulls go at once without an id, so jetfan, pulling first, is
//              pinned again (sticky). A delivery with a new Nats-Pin-Id makes it active again; none
//              within kRepinWait makes it standby (the server pins a client only when it delivers,
//              so an idle consumer pins nobody; standing by then costs nothing).
// jetfan learns of a refusal at its next pull or delivery, so it keeps pulling (requests expire
// every consumer.pull_expires) while active, and a full one sends keep-alives.
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
  enum class Role { kStandby, kActive, kChecking, kRepinning };
  enum class Change { kNone, kGained, kLost };
  // How long a standby waits after a leader change before pulling again, beyond a third of
  // priority_timeout (when a full owner's next keep-alive is refused), so that the former owner is
  // pinned again first (measured: 0 of 12 failovers with it, 12 of 12 without).
  static constexpr Duration kStandbyWait{1000};
  // How long a refused owner waits for the consumer to say whom the group is pinned to.
  static constexpr Duration kCheckWait{1000};
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
  // The server refused the id jetfan holds (423: Nats-Pin-Id mismatch, Nats-Wrong-Pin-Id): checking.
  void on_refused(TimePoint now);
  // While checking, the consumer's answer: whom the group is pinned to (empty: no one). Another
  // client: the pin is lost. No one: jetfan re-pins.
  Change on_pin_holder(std::string_view holder, TimePoint now);
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
  bool may_pull(TimePoint now) const { return role_ != Role::kChecking && (!quiet_until_ || now >= *quiet_until_); }
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
  void repin(TimePoint now);

  PinSettings settings_;
  Role role_ = Role::kStandby;
  std::string pin_id_;
  std::string given_up_;  // the last id jetfan held, once it lost or gave up the pin
  std::optional<TimePoint> quiet_until_;
  std::optional<TimePoint> repin_by_;
  std::optional<TimePoint> check_by_;
  std::optional<TimePoint> last_pull_with_id_;
  std::uint64_t gained_ = 0, lost_ = 0;
};

const char* to_string(PinTracker::Role role);

}  // namespace jetfan
