#pragma once
// OrderAway: the messages away from their order keys (docs/dispatch-rules.md R23). A message an
// ordered handler still owed, handed back to the server (by hand_back_for_room, for room), keeps its
// place in the gate (OrderGate) while it is away, so the later messages of its keys wait for it; but
// it may never come back, so each key waits for it only until order_away_hold() after the hand-back.
// This keeps which are away and until when; the caller forgets an expired one in its gate, which
// lets the rest of its keys go on.
//
// Pure: no I/O, no clock; time comes in as values. Memory: two nodes per message away.
// Thread: one owner (DispatchCore). Not thread-safe.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "time.hpp"

namespace jetfan {

// How long later messages of a key wait for an older one handed back with `delay` to come back,
// given the core's keepalive (a third of the consumer's AckWait): the delay and two AckWaits.
Duration order_away_hold(Duration delay, Duration keepalive);

class OrderAway {
 public:
  explicit OrderAway(Duration keepalive) : keepalive_(keepalive) {}

  // `seq` was handed back at `now` with `delay`: away until order_away_hold() from now. For one away
  // already, the new time replaces the old.
  void away(std::uint64_t seq, Duration delay, TimePoint now);
  // `seq` arrived again: its keys go on by the gate's rules alone. False: it was not away.
  bool back(std::uint64_t seq) { return !until_.empty() && back_away(seq); }
  // Those whose time ran out by `now`, lowest sequence first; none of them is away any more.
  std::vector<std::uint64_t> take_expired(TimePoint now);
  // The earliest time take_expired() has one to give, if any.
  std::optional<TimePoint> next() const;
  bool is_away(std::uint64_t seq) const { return until_.count(seq) != 0; }
  std::size_t size() const { return until_.size(); }

 private:
  bool back_away(std::uint64_t seq);

  Duration keepalive_;
  std::map<std::uint64_t, TimePoint> until_;               // by seq
  std::set<std::pair<TimePoint, std::uint64_t>> by_time_;  // the same, earliest first
};

}  // namespace jetfan
