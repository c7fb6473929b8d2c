#pragma once
// OtherReaderCheck: does another client read jetfan's durable? Two readers of one durable split its
// messages between them, and jetfan exists so that a module's durable has one reader. Pure: the
// dispatcher feeds it each consumer info answer with jetfan's own figures, and the moments when
// what came before cannot be judged against what comes after.
//
// Two kinds of evidence, each needing to last, so that a message in transit or a dead
// predecessor's pull request is not taken for a reader:
//   - Deliveries elsewhere. The consumer numbers every delivery (its consumer sequence). Every
//     delivery the server had made one answer ago should have reached jetfan by the next; those in
//     (bound, max(that, the highest that reached jetfan)] that did not are "missed". Missed above
//     what was accepted before, at two answers in a row, is seen (and accepted, so that only more
//     is new evidence): a transit delay goes back down, deliveries elsewhere never do.
//   - Waiting elsewhere. num_waiting above jetfan's own outstanding pull requests (the server drops
//     a request before jetfan retires it, so a lone jetfan never has fewer than the most it had
//     open since the answer before), at every answer for
//     longer than a pull request lives (`pull_expires`) plus a poll: a crashed predecessor's
//     requests are gone by then.
// An excuse (a reconnect, a possible leader change, time jetfan did not run) starts both anew: what
// was missed then is accepted as lost on the way. The verdict clears once there was no new
// evidence of either kind for `quiet`.
//
// Thread: one owner.

#include <cstdint>
#include <optional>

#include "time.hpp"

namespace jetfan {

struct OtherReaderVerdict {
  bool seen = false;
  std::uint64_t deliveries_elsewhere = 0;  // since the verdict was last clear
  std::uint64_t waiting_elsewhere = 0;     // pull requests at the server that are not jetfan's, now
};

class OtherReaderCheck {
 public:
  struct Server {
    std::uint64_t delivered_consumer_seq = 0;  // the consumer's number of its last delivery
    std::uint64_t num_waiting = 0;             // pull requests waiting at it
  };
  struct Own {
    std::uint64_t highest_consumer_seq = 0;  // the highest delivery number that reached jetfan
    std::uint64_t arrivals = 0;              // deliveries with a number that reached jetfan
    // jetfan's pull requests the server may still hold: the most open at once since the answer
    // before, as the server counted at some moment between
    std::uint64_t outstanding_pulls = 0;
  };

  OtherReaderCheck(Duration pull_expires, Duration poll, Duration quiet)
      : waiting_for_(pull_expires + poll), quiet_(quiet) {}

  // The consumer's last delivery number when jetfan bound it, at `now`: the deliveries before are not
  // jetfan's, and neither are those a pull request of a crashed predecessor takes while it lives
  // (nats-server 2.9 delivers into it): what is seen before `now + pull_expires + poll` is excused.
  void bound(std::uint64_t delivered_consumer_seq, TimePoint now) {
    base_ = delivered_consumer_seq;
    settled_at_ = now + waiting_for_;
  }
  void excuse() { excused_ = true; }
  // One consumer info answer, at `now`.
  const OtherReaderVerdict& observe(TimePoint now, const Server& server, const Own& own);
  const OtherReaderVerdict& verdict() const { return verdict_; }

 private:
  std::uint64_t missed(const Own& own) const;

  Duration waiting_for_;
  Duration quiet_;
  std::uint64_t base_ = 0;
  std::optional<TimePoint> settled_at_;         // answers before are excused
  bool excused_ = true;                         // the first answer only sets the scene
  std::optional<std::uint64_t> delivered_;      // the server's, at the answer before
  std::uint64_t accepted_ = 0;                  // missed that is no news: lost at an excuse, or counted
  std::optional<std::uint64_t> missed_before_;  // at the answer before, since the last excuse
  std::optional<TimePoint> waiting_since_;      // waiting elsewhere at every answer since
  std::optional<TimePoint> last_evidence_;
  OtherReaderVerdict verdict_;
};

}  // namespace jetfan
