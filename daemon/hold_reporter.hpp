#pragma once
// HoldReporter: says in the log when, why and for how long the core holds messages back for what
// may be outstanding at the server, and when the hold ends (docs/dispatch-rules.md, "After a
// restart" and "Deliveries lost on the way"):
//   - after a restart, what an earlier reader left unacked: ordered handlers wait for it, and under
//     AckPolicy all so does the ack floor (restart_holds, once, at start);
//   - deliveries lost on the way (a jump in the consumer's delivery numbers), and the end of what
//     they held back, by proof or let go (note, after every input to the core: it compares the
//     core's counters with what it logged last, so it costs a few compares when nothing changed).
// It decides nothing: the holds are the core's.
//
// Thread: the io_context thread only.

#include <cstdint>

#include "consumer_facts.hpp"
#include "dispatch_core.hpp"

namespace jetfan {

class HoldReporter {
 public:
  // `keepalive`: the core's (a third of AckWait), from which the holds' bounds follow.
  explicit HoldReporter(Duration keepalive) : keepalive_(keepalive) {}

  // After DispatchCore::expect_outstanding(outstanding): what it holds, and until when at most.
  // `proof_after`: from when the server can show it sent everything again.
  void restart_holds(const DispatchCore& core, const ConsumerFacts& facts, const Outstanding& outstanding,
                     Duration proof_after, Duration hold) const;
  // Logs a jump in delivery numbers the core counted since the last call, and the end of the hold
  // it caused.
  void note(const DispatchCore& core);

 private:
  Duration keepalive_;
  // What note() logged last: the core's counters then, and whether a gap held.
  std::uint64_t noted_gaps_ = 0, noted_lost_ = 0, noted_let_go_ = 0;
  bool gap_noted_ = false;
};

}  // namespace jetfan
