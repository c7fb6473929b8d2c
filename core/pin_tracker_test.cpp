// PinTracker: the roles of a pinned_client reader and what moves jetfan between them.

#include <catch2/catch.hpp>

#include "pin_tracker.hpp"

using namespace jetfan;
using std::chrono::milliseconds;
using Change = PinTracker::Change;
using Role = PinTracker::Role;

namespace {

const TimePoint t0 = TimePoint{} + std::chrono::hours(1);

PinTracker tracker() { return PinTracker(PinSettings{"jobs", milliseconds(3000)}); }

}  // namespace

TEST_CASE("pin: jetfan stands by until a delivery carries a pin id, and is then active with it", "[unit]") {
  auto pin = tracker();
  CHECK(pin.role() == Role::kStandby);
  CHECK(pin.pin_id().empty());
  CHECK(pin.group() == "jobs");
  CHECK(pin.on_message("", t0) == Change::kNone);
  CHECK(pin.role() == Role::kStandby);
  CHECK(pin.on_message("PIN1", t0) == Change::kGained);
  CHECK(pin.role() == Role::kActive);
  CHECK(pin.pin_id() == "PIN1");
  // Later deliveries carry no id, or the same: nothing changes.
  CHECK(pin.on_message("", t0) == Change::kNone);
  CHECK(pin.on_message("PIN1", t0) == Change::kNone);
  CHECK(pin.gained() == 1);
}

TEST_CASE("pin: a keep-alive pull is due a third of the priority timeout after the last pull with the id", "[unit]") {
  auto pin = tracker();
  CHECK_FALSE(pin.keepalive_due());
  pin.on_message("PIN1", t0);
  REQUIRE(pin.keepalive_due());
  CHECK(*pin.keepalive_due() == t0 + milliseconds(1000));
  pin.pulled(t0 + milliseconds(800));
  CHECK(*pin.keepalive_due() == t0 + milliseconds(1800));
  CHECK(*pin.next_wakeup() == t0 + milliseconds(1800));
}

TEST_CASE("pin: a 423 stops pulling until the consumer says whom the pin is with: another, and jetfan stands by",
          "[unit]") {
  auto pin = tracker();
  pin.on_message("PIN1", t0);
  pin.on_refused(t0);
  CHECK(pin.role() == Role::kChecking);
  CHECK(pin.active());
  CHECK(pin.pin_id().empty());
  CHECK_FALSE(pin.may_pull(t0));
  CHECK_FALSE(pin.keepalive_due());
  CHECK(pin.on_pin_holder("OTHER", t0 + milliseconds(5)) == Change::kLost);
  CHECK(pin.role() == Role::kStandby);
  CHECK(pin.may_pull(t0 + milliseconds(5)));
  CHECK(pin.on_pin_holder("OTHER", t0 + milliseconds(6)) == Change::kNone);  // once
  CHECK(pin.lost() == 1);
  // Pinned again later: gained anew.
  CHECK(pin.on_message("PIN2", t0 + milliseconds(5000)) == Change::kGained);
}

TEST_CASE("pin: a 423 from a new leader that pins no one makes jetfan re-pin, not stand by", "[unit]") {
  auto pin = tracker();
  pin.on_message("PIN1", t0);
  pin.on_refused(t0);
  CHECK(pin.on_pin_holder("", t0 + milliseconds(5)) == Change::kNone);
  CHECK(pin.role() == Role::kRepinning);
  CHECK(pin.may_pull(t0 + milliseconds(5)));
  CHECK(pin.on_message("PIN2", t0 + milliseconds(10)) == Change::kNone);
  CHECK(pin.role() == Role::kActive);
  CHECK(pin.lost() == 0);
  // Unanswered, the check ends after kCheckWait in a re-pin, and that after kRepinWait in a loss.
  pin.on_refused(t0 + milliseconds(20));
  CHECK(pin.next_wakeup() == t0 + milliseconds(20) + PinTracker::kCheckWait);
  CHECK(pin.tick(t0 + milliseconds(20) + PinTracker::kCheckWait) == Change::kNone);
  CHECK(pin.role() == Role::kRepinning);
  CHECK(pin.tick(t0 + milliseconds(20) + PinTracker::kCheckWait + PinTracker::kRepinWait) == Change::kLost);
  CHECK(pin.role() == Role::kStandby);
}

TEST_CASE("pin: after a leader change the owner drops its id, pulls at once, and keeps the pin it is given", "[unit]") {
  auto pin = tracker();
  pin.on_message("PIN1", t0);
  pin.on_leader_change(t0 + milliseconds(100));
  CHECK(pin.role() == Role::kRepinning);
  CHECK(pin.active());
  CHECK(pin.pin_id().empty());
  CHECK(pin.may_pull(t0 + milliseconds(100)));
  CHECK(pin.on_message("PIN2", t0 + milliseconds(400)) == Change::kNone);  // no takeover: it never let go
  CHECK(pin.role() == Role::kActive);
  CHECK(pin.pin_id() == "PIN2");
  CHECK(pin.tick(t0 + milliseconds(10000)) == Change::kNone);
}

TEST_CASE("pin: a re-pin that does not come within kRepinWait is a lost pin", "[unit]") {
  auto pin = tracker();
  pin.on_message("PIN1", t0);
  pin.on_leader_change(t0);
  CHECK(pin.tick(t0 + PinTracker::kRepinWait - milliseconds(1)) == Change::kNone);
  CHECK(*pin.next_wakeup() == t0 + PinTracker::kRepinWait);
  CHECK(pin.tick(t0 + PinTracker::kRepinWait) == Change::kLost);
  CHECK(pin.role() == Role::kStandby);
}

TEST_CASE("pin: a standby waits after a leader change until a full owner's keep-alive has been refused", "[unit]") {
  auto pin = tracker();
  pin.on_leader_change(t0);
  // A third of priority_timeout (when the owner's next keep-alive goes), and kStandbyWait.
  const TimePoint until = t0 + milliseconds(1000) + PinTracker::kStandbyWait;
  CHECK_FALSE(pin.may_pull(until - milliseconds(1)));
  CHECK(*pin.quiet_until() == until);
  pin.tick(until);
  CHECK(pin.may_pull(until));
  CHECK_FALSE(pin.quiet_until());
}

TEST_CASE("pin: step-down gives the pin up and keeps jetfan from pulling for the hold", "[unit]") {
  auto pin = tracker();
  pin.on_message("PIN1", t0);
  CHECK(pin.step_down(t0, milliseconds(2000)) == Change::kLost);
  CHECK(pin.role() == Role::kStandby);
  CHECK_FALSE(pin.may_pull(t0 + milliseconds(1999)));
  pin.tick(t0 + milliseconds(2000));
  CHECK(pin.may_pull(t0 + milliseconds(2000)));
  // A step-down while standing by changes nothing but the hold.
  CHECK(pin.step_down(t0 + milliseconds(3000), milliseconds(2000)) == Change::kNone);
}

TEST_CASE("pin: deliveries still carrying the id jetfan gave up are no new pin", "[unit]") {
  auto pin = tracker();
  pin.on_message("PIN1", t0);
  pin.step_down(t0, milliseconds(2000));
  // Its requests still waiting at the server are given messages with the id it held.
  CHECK(pin.on_message("PIN1", t0 + milliseconds(8)) == Change::kNone);
  CHECK(pin.role() == Role::kStandby);
  CHECK(pin.gained() == 1);
  // A new id is a new pin.
  CHECK(pin.on_message("PIN2", t0 + milliseconds(9000)) == Change::kGained);
  CHECK(pin.pin_id() == "PIN2");
}
