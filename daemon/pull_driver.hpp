#pragma once
// PullDriver: jetfan's pull requests at the server, kept up. core/PullLedger decides what to ask for
// and when; this carries it out, on Upstream and the probe alarm:
//   - top_up(): sends what the ledger asks for as room frees; with a pinned_client group, each
//     request names the group and the pin (PinnedReader::decorate), none goes out while the
//     PinnedReader says not to, and a claim pull goes out when it re-pins with no request open.
//   - on_status(): a status reply gives credit back; one the ledger did not expect (a 409 of another
//     kind, a consumer deleted) means the consumer's leader may have changed. What it says of the
//     consumer is returned for the Dispatcher to act on; the credit is this type's.
//   - leader_unsure(): after a reconnect, an odd status, silence or a new pin leader, requests sent
//     before the new leader was up are lost: it probes the consumer (Alarm::kProbe) until it answers,
//     then pulls anew, and logs how long that took.
//   - the most requests open since the consumer's info last answered: what a lone jetfan's
//     num_waiting can reach (OtherReaderCheck).
// The Dispatcher calls it; it calls nothing of the Dispatcher's.
//
// Thread: the io_context thread (the Dispatcher's). `upstream`, `time` and `health` outlive it; a
// PinnedReader given to attach() does too.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "pinned_reader.hpp"
#include "pull_ledger.hpp"
#include "reader_health.hpp"
#include "timekeeper.hpp"
#include "upstream.hpp"

namespace jetfan {

class PullDriver {
 public:
  PullDriver(const PullSettings& settings, Upstream& upstream, Timekeeper& time, ReaderHealth& health);

  // A pinned_client group's reader; before the first top_up().
  void attach(PinnedReader& pinned) { pinned_ = &pinned; }

  // Sends the requests the ledger asks for now that `held_for_room` messages and `bytes_held` bytes
  // are held (DispatchCore::held_for_room, the arena's bytes). Only while serving (before stop()).
  void top_up(std::size_t held_for_room, std::uint64_t bytes_held);
  // A message arrived: it is charged to the oldest request. `size` 0 for one routed to no handler.
  void on_message(TimePoint now, std::uint64_t size) { ledger_.on_message(now, size); }

  struct StatusHeard {
    // When the answered request was sent, if it was the ledger's: the server heard what jetfan sent
    // before then (DispatchCore::heard).
    std::optional<TimePoint> request_sent;
    // The consumer was deleted (logged here already as a pull status; the Dispatcher says more).
    bool consumer_deleted = false;
  };
  StatusHeard on_status(const PullStatus& status, TimePoint now);
  void on_probe_answer(bool answered, TimePoint now);
  // The connection came back: the server forgot every request, and cnats does not send them again.
  void on_reconnected(TimePoint now);
  // Housekeeping: drops every request after kMissedHeartbeats heartbeats of silence.
  void check_liveness(TimePoint now);
  // The consumer's leader may have changed: probe until it answers, then pull anew.
  void leader_unsure(TimePoint now);
  // Alarm::kProbe: sends the probe that is due, if any, and arms the alarm for the next.
  void probe(TimePoint now);
  // Draining: no request or probe goes out any more.
  void stop();

  // The most requests jetfan had open since answered() (at least those open now), and the start
  // of the next such span: call answered() when the consumer's info has been judged.
  std::uint64_t most_open() const;
  void answered() { most_open_ = ledger_.outstanding(); }

  const PullLedger& ledger() const { return ledger_; }

 private:
  Upstream& upstream_;
  Timekeeper& time_;
  ReaderHealth& health_;
  PinnedReader* pinned_ = nullptr;
  PullLedger ledger_;
  bool stopped_ = false;
  std::vector<PullRequest> requests_;      // reused by top_up
  std::optional<TimePoint> unsure_since_;  // the leader may have changed since
  std::uint64_t most_open_ = 0;
};

}  // namespace jetfan
