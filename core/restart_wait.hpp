#pragma once
// What an earlier reader of the consumer may have left unacked at the server, and the two waits for
// it after a restart (docs/dispatch-rules.md R26-R31):
//   RestartWait  ordered handlers: the later messages of each outstanding message's keys wait
//                until it came back (DispatchCore puts it in its OrderGate; this keeps which are
//                still away and decides when the waiting ends for all of them);
//   FloorHold    AckPolicy all: no +ACK or +TERM at all while the server may hold unacked messages
//                jetfan has not seen, since one +ACK settles everything below it.
// Both end once as many of (floor, delivered] came back as were pending (R27), once the server
// shows it sent again all it held (SentAgainProof, R28), or at Outstanding::until (R29).
//
// Pure: no I/O, no clock; time comes in as values. Memory: the sequences of (floor, delivered] away
// and come back. Thread: one owner (DispatchCore). Not thread-safe.

#include <cstdint>
#include <limits>
#include <set>
#include <vector>

#include "order_gate.hpp"
#include "time.hpp"

namespace jetfan {

// What an earlier reader of the consumer may have left unacked at the server: the messages in
// (floor, delivered] of the stream, read at bind (daemon/Dispatcher::expect_outstanding).
struct Outstanding {
  struct Entry {
    std::uint64_t stream_seq = 0;  // floor < stream_seq <= delivered
    std::vector<OrderKey> order;   // its ordered recipients now, each with its order key
  };
  std::vector<Entry> messages;  // those with an ordered recipient; sequences gone from the stream left out
  bool unread = false;          // they could not all be read: every ordered delivery waits until `until`
  std::uint64_t floor = 0;      // the consumer's ack floor (stream sequence)
  std::uint64_t delivered = 0;  // its last delivered stream sequence
  std::uint64_t pending = 0;    // its NumAckPending: how many of (floor, delivered] come back
  TimePoint until{};            // the waiting ends by then in any case
  std::int64_t wall_ns = 0;     // jetfan's wall clock at the call (ns since the epoch; 0: unknown)
};

// When the server has shown it sent again everything an earlier reader left (R28): by `at` all of
// it was due again (what was in flight after AckWait, what was handed back after at most
// nak_delay_max), and the server sends what is due before anything new. So a message it stored
// after that time arriving, or an answer to a pull request sent after it, proves it.
struct SentAgainProof {
  TimePoint at = TimePoint::max();
  std::int64_t wall_ns = std::numeric_limits<std::int64_t>::max();

  // Given the core's nak_delay_max and keepalive (a third of AckWait), for `outstanding` at `now`.
  static SentAgainProof after(const Outstanding& outstanding, Duration nak_delay_max, Duration keepalive,
                              TimePoint now);
  bool by_store(std::uint64_t published_ns, TimePoint now) const {
    return now >= at && published_ns != 0 && static_cast<std::int64_t>(published_ns) >= wall_ns;
  }
  bool by_answer(TimePoint asked_at, TimePoint now) const { return now >= at && asked_at >= at; }
};

class RestartWait {
 public:
  RestartWait(const Outstanding& outstanding, const SentAgainProof& proof);

  // Whether `stream_seq` is one that may be outstanding.
  bool covers(std::uint64_t stream_seq) const { return stream_seq > floor_ && stream_seq <= delivered_; }
  // `stream_seq` was put in the gate for the handlers that owe it; it is away until it arrives.
  void away(std::uint64_t stream_seq) { away_.insert(stream_seq); }
  // Whether there is anything to wait for: one away, or all of them unread.
  bool waits() const { return !away_.empty() || unread_; }
  // An arrival: true once as many came back as were pending (the wait ends, R27).
  bool arrived(std::uint64_t stream_seq);
  // Whether every ordered delivery waits (they could not all be read, R30).
  bool holds_all() const { return unread_; }
  // Still away: the caller forgets them in its gate when the wait ends.
  const std::set<std::uint64_t>& still_away() const { return away_; }
  TimePoint until() const { return until_; }
  const SentAgainProof& proof() const { return proof_; }

 private:
  std::uint64_t floor_;
  std::uint64_t delivered_;
  std::uint64_t pending_;
  bool unread_;
  TimePoint until_;
  SentAgainProof proof_;
  std::set<std::uint64_t> away_;  // in the gate, not back yet
  std::set<std::uint64_t> back_;  // of (floor, delivered], come back
};

class FloorHold {
 public:
  // `before`: the hold this one replaces, if any; the later `until` of the two counts.
  FloorHold(const Outstanding& outstanding, const SentAgainProof& proof, const FloorHold* before);

  // An arrival: true once as many of (floor, delivered] came back as were pending (R27).
  bool arrived(std::uint64_t stream_seq);
  TimePoint until() const { return until_; }
  const SentAgainProof& proof() const { return proof_; }

 private:
  TimePoint until_;
  std::uint64_t floor_;
  std::uint64_t delivered_;
  std::uint64_t pending_;
  std::set<std::uint64_t> back_;
  SentAgainProof proof_;
};

}  // namespace jetfan
