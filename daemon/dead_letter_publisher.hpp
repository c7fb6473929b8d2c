#pragma once
// DeadLetterPublisher: what jetfan does with the core's kDeadLetter. The core decides when a handler
// gives a message up and when a failed publish is tried again (core/retry_budget.hpp); here the
// dead letter is made (dead_letters.hpp: the message as it came, plus the Jetfan-* headers and a
// Nats-Msg-Id), published with JetStream's acknowledgement through the Upstream, and its answer
// given back to the core: stored settles the message for that handler, failed is tried again after
// the handler's backoff. A publish that is never answered (the connection went, the server never
// answered within kPublishTimeout) counts as failed, so nothing waits for ever.
//
// The core is not called while its effects are walked: a publish that cannot go out at all is
// noted, and failed by fail_unsent() once the effects are applied.
//
// A handler's TERM may say why ("TERM 7 no machine"), and from protocol version 3 on its NAK too
// ("NAK 7 - database down"): the reason is noted when the answer comes and goes into the dead
// letter's Jetfan-Reason ("TERM: no machine", "max_attempts 5 used up; last: nak: database down"),
// so that `jetfan dlq list` says it. A NAK's reason is used only when that NAK was the last failure:
// a NAK without one drops the note, and a timeout or disconnect after it leaves it out. Notes are
// kept until the dead letter is stored (a failed publish is tried again with it), at most
// kMaxReasons of them (the oldest go first, also those of messages the handler later acked: a dead
// letter whose note went says "TERM" or "last: nak" alone).
//
// Thread: the io_context thread only. `config`, `upstream`, `core` and `warnings` must outlive it.

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config.hpp"
#include "dead_letters.hpp"
#include "dispatch_core.hpp"
#include "held_messages.hpp"
#include "rate_limited_log.hpp"
#include "upstream.hpp"

namespace jetfan {

class DeadLetterPublisher {
 public:
  DeadLetterPublisher(const Config& config, Upstream& upstream, DispatchCore& core, RateLimitedLog& warnings)
      : config_(config), upstream_(upstream), core_(core), warnings_(warnings) {}

  static constexpr std::size_t kMaxReasons = 1024;
  static constexpr std::size_t kMaxReasonBytes = 256;

  // Handler `handler` said TERM (`termed`) or NAK with `reason` for stream seq `seq`: its dead letter
  // will say so. Nothing is noted for a handler without dead letters; an empty reason forgets one
  // noted before.
  void note_reason(std::size_t handler, std::uint64_t seq, bool termed, std::string_view reason);
  // Publishes the dead letter of a kDeadLetter effect for `held`.
  void publish(const Effect& effect, const HeldMessage& held, TimePoint now);
  // JetStream's answer to a publish (UpstreamListener::on_published).
  void on_published(std::uint64_t id, const PublishResult& result, TimePoint now);
  // Fails the publishes that could not be sent; after the core's effects are applied.
  void fail_unsent(TimePoint now);
  // Fails the publishes unanswered for too long; true when there were any (the core has work).
  bool fail_overdue(TimePoint now);
  // The connection to the server was made again: no answer to what was sent before will come.
  void connection_lost(TimePoint now);

  std::size_t pending() const { return pending_.size(); }

 private:
  void failed(std::uint64_t id, std::string_view why, TimePoint now);
  // describe(reason), with the handler's own words after a TERM, or after a last NAK, when they were noted.
  std::string reason_text(std::size_t handler, std::uint64_t seq, const GiveUpReason& reason) const;

  const Config& config_;
  Upstream& upstream_;
  DispatchCore& core_;
  RateLimitedLog& warnings_;
  PendingPublishes pending_;           // sent, waiting for JetStream's answer
  std::vector<std::uint64_t> unsent_;  // could not go out; failed once effects are applied
  struct Said {
    bool termed = false;
    std::string reason;
    std::uint64_t stamp = 0;  // which entry of reason_order_ is this note's
  };
  using ReasonKey = std::pair<std::size_t, std::uint64_t>;  // (handler, seq)
  struct Noted {
    ReasonKey key;
    std::uint64_t stamp;
  };
  std::map<ReasonKey, Said> reasons_;
  std::deque<Noted> reason_order_;  // oldest first, for the bound; at most 2 x kMaxReasons
  std::uint64_t reason_stamp_ = 0;
};

}  // namespace jetfan
