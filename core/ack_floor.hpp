#pragma once
// AckFloor: the ack floor of AckPolicy all (docs/dispatch-rules.md R17-R19).
//
// Under AckPolicy all one +ACK (or +TERM) settles every lower sequence at the server, those jetfan
// never saw included. So a message its recipients settled waits here until nothing below it is
// unsettled; then everything the floor passed goes out at once: a +TERM for each terminated one,
// lowest first (each has its advisory), the one +ACK of the highest unless it was terminated, and
// the release of every one. While it waits only its reply subject is needed (kTrim, R18), and it is
// kept alive like any message held (touch()).
//
// Nothing at or above a ceiling the caller passes in goes out: the caller holds the floor that way
// while the server may hold messages it has not seen (R19): 0 while FloorHold holds it after a
// restart, F+1 while DeliveryGap says deliveries above F may be lost, kNoCeiling otherwise.
//
// What goes out is decided here and appended, in order, to the caller's list of Effects (the
// core's own effects()).
//
// Pure: no I/O, no clock; time comes in as values. Memory: a node per sequence held and not yet
// settled, and one per settled message waiting, from the caller's memory resource (DispatchCore's
// NodePool), which must outlive this. Thread: one owner (DispatchCore). Not thread-safe.

#include <cstdint>
#include <limits>
#include <map>
#include <memory_resource>
#include <set>
#include <vector>

#include "effect.hpp"
#include "time.hpp"

namespace jetfan {

class AckFloor {
 public:
  static constexpr std::uint64_t kNoCeiling = std::numeric_limits<std::uint64_t>::max();
  // What goes out: kAck, kTerm, kNak, kWip, kRelease and kTrim, each naming a copy of a message.
  using Effects = std::vector<Effect>;

  explicit AckFloor(std::pmr::memory_resource* memory) : unsettled_(memory), waiting_(memory) {}

  // `seq` is held and not settled: nothing at or above it goes out until settle() or gone().
  void held(std::uint64_t seq) { unsettled_.insert(seq); }
  // `seq` is settled (terminate: with +TERM, else +ACK) on `handle`, last told the server about at
  // `touched`: it waits, and whatever the floor passes now goes out; kTrim if it still waits.
  // Precondition: `seq` does not wait already (copy() said false).
  void settle(std::uint64_t seq, MessageHandle handle, bool terminate, TimePoint touched, std::uint64_t ceiling,
              Effects& out);
  // The server will not deliver `seq` again (MaxDeliver): it no longer holds the floor back.
  void gone(std::uint64_t seq, std::uint64_t ceiling, Effects& out);
  // Whatever the floor passes now goes out: after the ceiling rose (a hold ended).
  void advance(std::uint64_t ceiling, Effects& out);
  // Another copy of `seq` arrived, on `handle`. When `seq` waits, the answer goes on the new copy: the
  // old one is released and the new one trimmed; true. False, and nothing changes, otherwise.
  bool copy(std::uint64_t seq, MessageHandle handle, TimePoint now, Effects& out) {
    return !waiting_.empty() && copy_waiting(seq, handle, now, out);
  }
  // Whether a copy of a message settled earlier (docs/dispatch-rules.md R16), `seq`, must wait
  // rather than be answered at once: it is at or above the ceiling, or something below is unsettled.
  bool must_wait(std::uint64_t seq, std::uint64_t ceiling) const {
    return seq >= ceiling || (!unsettled_.empty() && *unsettled_.begin() < seq);
  }
  // kWip for every message waiting that the server last heard of at or before `stale`; now touched.
  void touch(TimePoint stale, TimePoint now, Effects& out);
  // The end of a drain: nothing below will be settled by this reader. kNak (after `delay`) and
  // kRelease for each message waiting, lowest first; none waits afterwards. What is unsettled stays
  // (the caller's messages are handed back too).
  void abandon(Duration delay, Effects& out);

  // Settled messages waiting for the floor.
  std::size_t waiting() const { return waiting_.size(); }
  // Sequences held and not settled.
  std::size_t unsettled() const { return unsettled_.size(); }

 private:
  struct Waiting {
    MessageHandle handle;
    TimePoint touched;
    bool terminate;
  };
  bool copy_waiting(std::uint64_t seq, MessageHandle handle, TimePoint now, Effects& out);

  std::pmr::set<std::uint64_t> unsettled_;
  std::pmr::map<std::uint64_t, Waiting> waiting_;  // by seq
};

}  // namespace jetfan
