#pragma once
// What jetfan does when it is full: it holds all that max_held and max_held_bytes allow and pulls
// no more. Pure: loads and counts in, orders and verdicts out.
//
// Full is how jetfan pushes back under load, and usually passes as handlers confirm. Two things
// can be done about it:
//   - hand_backs_when_full: a handler set to `when_full: hand_back` that owes more than its share
//     of what is held (held / handlers, at least 1) hands its oldest back to the server, keeping
//     its share, so that its backlog does not take the room of the others' messages;
//   - StallWatch: full with nothing settling for `stall_after` is a stall. The handler holding
//     everyone up is the one with the most messages waiting for it and not in flight (working on
//     them is not being stuck), then the one owed most; the lowest index among equals.
//
// Thread: one owner. Not thread-safe.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "dispatch_core.hpp"
#include "time.hpp"

namespace jetfan {

struct HandBackOrder {
  std::size_t handler = 0;
  std::size_t keep = 0;  // its share: the newest this many stay
  std::size_t owed = 0;  // what it owed when the order was made
};

// `hands_back[h]`: handler h is set to when_full: hand_back. `held`: messages held now.
std::vector<HandBackOrder> hand_backs_when_full(std::span<const HandlerLoad> loads, const std::vector<bool>& hands_back,
                                                std::size_t held);

class StallWatch {
 public:
  struct Verdict {
    enum class Kind {
      kFine,       // not full, or full and settling, or not for long enough yet
      kRecovered,  // no longer full after a stall
      kStalled,    // full with nothing settled for stall_after
    };
    Kind kind = Kind::kFine;
    std::size_t handler = 0;  // kStalled: the one holding everyone up
    bool first = false;       // kStalled: the first verdict of this stall
  };

  explicit StallWatch(Duration stall_after) : stall_after_(stall_after) {}

  // One look. `settled`: how many messages have settled so far (any monotonic count will do);
  // `handed_back`: this look handed messages back (room is coming, so it is not a stall); `loads`:
  // per handler, needed only when full.
  Verdict look(bool full, std::uint64_t settled, bool handed_back, std::span<const HandlerLoad> loads, TimePoint now);

  bool stalled() const { return stalled_; }
  std::size_t stalled_by() const { return stalled_by_; }               // while stalled()
  std::optional<TimePoint> full_since() const { return full_since_; }  // full, with nothing settling, since

 private:
  Duration stall_after_;
  std::optional<TimePoint> full_since_;
  std::uint64_t settled_when_full_ = 0;
  bool stalled_ = false;
  std::size_t stalled_by_ = 0;
};

}  // namespace jetfan
