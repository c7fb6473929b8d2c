#pragma once
// DeliveryGap: deliveries lost on the way, and how long what lies above them is held back
// (docs/dispatch-rules.md R32-R35).
//
// The server numbers every delivery of the consumer (the <cseq> of the ack subject), and on one
// connection they arrive in that order. A jump means deliveries were sent that never arrived (a
// broken connection, a consumer leader that died with deliveries in its buffers); the server sends
// those messages again only after AckWait. A lost first delivery is of a stream sequence above the
// highest first delivered before the jump (F, floor()): a message the core holds or settled is safe
// whatever happened to one of its copies. So after a jump, what lies above F is held back (holds())
// until it is accounted for:
//   kBack   every stream sequence between F and the first first-delivery after the jump arrived;
//   kProof  past gap_hold() after the jump, the server showed it redelivered what AckWait expired:
//           a message it stored after that time arrived, or it answered a pull request sent after it;
//   kLetGo  gap_let_go() after the jump, when the rest goes on.
// A jump back (a new leader, a restarted server) holds nothing. A jump while one is held widens it.
//
// Pure: no I/O, no clock; time comes in as values. What a hold means for delivery and for the ack
// floor is DispatchCore's, which owns one and acts on each End it returns. Memory: the sequences
// still missing, at most kMaxCounted (beyond that counting gives way to the proof by time).
// Thread: one owner. Not thread-safe.

#include <cstdint>
#include <optional>
#include <set>

#include "time.hpp"

namespace jetfan {

// From the jump, given the core's keepalive (a third of the consumer's AckWait): when proof that the
// loss came back may end the hold (AckWait and a third), and when it ends anyway (three AckWaits).
Duration gap_hold(Duration keepalive);
Duration gap_let_go(Duration keepalive);

class DeliveryGap {
 public:
  enum class End { kBack, kProof, kLetGo };

  explicit DeliveryGap(Duration keepalive) : keepalive_(keepalive) {}

  // What the consumer had delivered when jetfan bound it: its last delivery's number and the
  // highest stream sequence it delivered. Before the first arrival.
  void bound(std::uint64_t consumer_seq, std::uint64_t stream_seq);
  // The consumer was made anew: it numbers its deliveries from 1 and may start anywhere in the
  // stream. A hold under way stays.
  void new_consumer() {
    last_consumer_seq_.reset();
    highest_first_delivered_ = 0;
  }
  // Before an arrival is taken: how many deliveries were lost just before it (0: none). A
  // consumer_seq of 0 (not known) is not checked. wall_ns: jetfan's wall clock at arrival, 0 if not
  // known (then only a pull's answer or the let-go ends a hold by time).
  std::uint64_t check(std::uint64_t consumer_seq, std::int64_t wall_ns, TimePoint now);
  // After it was taken: `first` when it is the message's first delivery (of a routable message with
  // a known sequence); published_ns when the stream stored it (0: not known). The End, if this ends
  // the hold.
  std::optional<End> arrived(std::uint64_t stream_seq, bool first, std::uint64_t published_ns, TimePoint now);
  // The server answered a pull request sent at `asked_at`.
  std::optional<End> heard(TimePoint asked_at, TimePoint now);
  std::optional<End> tick(TimePoint now);

  bool held() const { return hold_.has_value(); }
  std::uint64_t floor() const { return hold_ ? hold_->floor : 0; }
  // Whether `stream_seq` may be one that was lost: above the floor of a hold.
  bool holds(std::uint64_t stream_seq) const { return hold_ && stream_seq > hold_->floor; }
  std::optional<TimePoint> let_go_at() const;

 private:
  struct Hold {
    std::uint64_t floor = 0;  // F: what may be lost is above it
    // The latest jump's F, while its first first-delivery is awaited, and what came back above it
    // before that.
    std::optional<std::uint64_t> open_from;
    std::set<std::uint64_t> early;
    std::set<std::uint64_t> missing;  // above F, below a first-delivery after a jump, not back yet
    bool uncounted = false;           // too many to count: kBack cannot end it
    TimePoint proof_from{};           // kProof from then on
    std::int64_t proof_from_wall_ns = 0;
    TimePoint let_go{};
  };
  std::optional<End> end(End why);

  Duration keepalive_;
  std::optional<Hold> hold_;
  std::optional<std::uint64_t> last_consumer_seq_;
  std::uint64_t highest_first_delivered_ = 0;
};

}  // namespace jetfan
