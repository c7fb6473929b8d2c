#pragma once
// RetryBudget: how often each handler has failed each message, and the dead letters being
// published. The bookkeeping of DispatchCore's per-handler retry policy (dispatch_core.hpp says
// when the core asks it what); pure: no I/O, no clock (time comes in as values).
//
// An attempt is a delivery to one handler that ended in NAK, ack_timeout or a disconnect. Counts
// are per handler per message, kept while the message is held and, after it is handed back to the
// server, for the `remember` most recently handed back (as the core keeps confirmations), so a
// redelivery continues the count. They live in memory only: a restart begins again at zero, and the
// server's delivery count bounds every handler's count from above.
//
// The same counts say how often a message has been delivered to a handler (deliveries_to, the
// <deliveries> of its MSG, proto/PROTOCOL.md): every delivery to a handler before this one ended in
// a failure, as one that ended in ACK or TERM is not repeated while the counts are kept.
//
// A dead letter is published on the caller's side (the core emits Effect::Kind::kDeadLetter with a
// publish id); until the caller reports it stored, the handler has not settled the message. A failed
// publish is tried again after a backoff that doubles with each failure.
//
// Memory: bounded by the messages held plus `remember`; pending dead letters by the messages held.
// Thread: one owner. Not thread-safe.

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "time.hpp"

namespace jetfan {

// A handler's retry policy. The default is today's: attempts without limit, no dead letters.
struct RetryPolicy {
  std::uint32_t max_attempts = 0;  // 0: no limit
  Duration backoff{0};             // first wait after a failure, doubling with each; 0: the core's nak_delay
  Duration backoff_max{0};         // the doubling stops here; 0: the core's nak_delay_max
  bool dead_letter = false;        // a used-up budget or a TERM is published as a dead letter
};

// Why a delivery failed.
enum class FailCause { kNak, kTimeout, kDisconnect };
const char* to_string(FailCause cause);
// As one word, for logs, headers and metric labels: "nak", "ack_timeout", "disconnect".
const char* cause_word(FailCause cause);

// Why a handler gave a message up: it said TERM, or it used up max_attempts.
struct GiveUpReason {
  bool termed = false;
  std::uint32_t attempts = 0;      // failed deliveries to it
  std::uint32_t max_attempts = 0;  // its budget then
  FailCause last = FailCause::kNak;
};
// "TERM", or "max_attempts 5 used up; last: ack_timeout".
std::string describe(const GiveUpReason& reason);

// How many attempts a handler needed before settling a message, counted into buckets 1, 2, 3, 5,
// 10, 20, 50, 100 and more. Observing allocates nothing.
class AttemptsHistogram {
 public:
  static constexpr std::array<std::uint32_t, 8> kBounds = {1, 2, 3, 5, 10, 20, 50, 100};
  static constexpr std::size_t kBuckets = kBounds.size() + 1;
  void observe(std::uint32_t attempts);
  std::uint64_t bucket(std::size_t i) const { return counts_[i]; }  // not cumulative; last is +Inf
  std::uint64_t count() const { return count_; }
  std::uint64_t sum() const { return sum_; }

 private:
  std::array<std::uint64_t, kBuckets> counts_{};
  std::uint64_t count_ = 0;
  std::uint64_t sum_ = 0;
};

class RetryBudget {
 public:
  explicit RetryBudget(std::size_t remember) : remember_(remember) {}

  // Counts a failed delivery of `seq` to `handler`; returns its attempts so far. `server_deliveries`
  // is the server's delivery count of the copy held (1 the first time).
  std::uint32_t count_failure(std::uint64_t seq, std::size_t handler, FailCause cause,
                              std::uint64_t server_deliveries = 1);
  std::uint32_t attempts(std::uint64_t seq, std::size_t handler) const;
  // How often `seq` has been delivered to `handler`, a delivery about to be made included (1: never
  // before), given the server's count of the copy held. While counts of `seq` are kept: the
  // handler's failures, plus one, plus the server's deliveries that came before the first failure
  // counted (0 when that failure was of its first delivery; otherwise a bound from above, as those
  // deliveries may not all have reached this handler). With none kept (nothing failed while jetfan
  // held it, or jetfan forgot: a restart, more than `remember` handed back since): the server's
  // count, which is above 1 whenever an earlier delivery may have reached the handler.
  std::uint64_t deliveries_to(std::uint64_t seq, std::size_t handler, std::uint64_t server_deliveries) const;
  // The wait after a handler's `attempts`-th failure: `backoff` doubling up to `backoff_max`.
  static Duration delay(std::uint32_t attempts, Duration backoff, Duration backoff_max);

  // The message went back to the server: its counts are kept among the `remember` latest.
  void handed_back(std::uint64_t seq);
  // It arrived again and is held: its counts are kept while it is.
  void held_again(std::uint64_t seq);
  // It is settled at the server, or every handler's part in it is over: its counts go.
  void forget(std::uint64_t seq);
  // The consumer is gone (DispatchCore::forget_history): the counts of what is not held go.
  void forget_handed_back();

  // A dead letter of `seq` for `handler` is to be published now; returns its publish id.
  std::uint64_t begin_publish(std::uint64_t seq, std::size_t handler, const GiveUpReason& reason);
  // Whether a dead letter of `seq` is being published or waits to be tried again.
  bool publishing(std::uint64_t seq) const;
  bool publishing(std::uint64_t seq, std::size_t handler) const;
  struct Published {
    std::uint64_t seq = 0;
    std::size_t handler = 0;
    GiveUpReason reason;
    std::uint32_t failures = 0;  // failed publishes before this answer
  };
  // The answer to publish `id`: stored (the pending dead letter is over) or failed (tried again at
  // `retry_at`). nullopt: no such publish pending (late, or dropped).
  std::optional<Published> stored(std::uint64_t id);
  std::optional<Published> find(std::uint64_t id) const;
  std::optional<Published> failed(std::uint64_t id, TimePoint retry_at);
  // Dead letters whose retry is due at `now`, each given a new publish id.
  struct Due {
    std::uint64_t id = 0;
    std::uint64_t seq = 0;
    std::size_t handler = 0;
    GiveUpReason reason;
  };
  std::vector<Due> due(TimePoint now);
  std::optional<TimePoint> next_retry() const;
  // Drops the dead letters pending for `seq` (a drain hands it back, or it goes otherwise); returns
  // the handlers they were for.
  std::vector<std::size_t> drop_publishes(std::uint64_t seq);
  std::size_t pending() const { return pending_.size(); }

  // A new handler table (see HandlerReindex): counts and pending dead letters follow their handler;
  // those of removed handlers go.
  void reindex(const std::vector<std::optional<std::size_t>>& old_to_new);

 private:
  struct Count {
    std::size_t handler;
    std::uint32_t attempts;
  };
  struct Entry {
    std::vector<Count> counts;
    std::uint64_t stamp = 0;   // nonzero: handed back, evicted when it is the oldest of too many
    std::uint64_t before = 0;  // the server's deliveries before the one whose failure was counted first
  };
  struct Pending {
    std::uint64_t id = 0;  // 0: waiting for retry_at
    GiveUpReason reason;
    std::uint32_t failures = 0;
    TimePoint retry_at{};
  };
  using Key = std::pair<std::uint64_t, std::size_t>;  // (seq, handler)

  std::size_t remember_;
  std::unordered_map<std::uint64_t, Entry> entries_;
  std::deque<std::pair<std::uint64_t, std::uint64_t>> handed_back_;  // (seq, stamp), oldest first
  std::size_t handed_back_count_ = 0;
  std::uint64_t stamp_ = 0;
  std::map<Key, Pending> pending_;
  std::unordered_map<std::uint64_t, Key> by_id_;
  std::uint64_t next_id_ = 1;
};

}  // namespace jetfan
