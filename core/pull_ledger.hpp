#pragma once
// PullLedger: the credit jetfan has asked the server for, and what to ask for next. Pure: no
// cnats, no clock; the caller passes "now" in and sends the requests it is handed.
//
// jetfan reads its pull consumer with plain pull requests ($JS.API.CONSUMER.MSG.NEXT.<stream>.
// <durable>), each with its own reply subject, so every request is known by an id. The rules:
//   - Held plus requested never exceeds max_held: the server never sends more than jetfan may hold.
//     The same goes for bytes, with max_held_bytes: each request carries max_bytes, at most half the
//     budget so that two can wait at once. When a request ends because the next message is bigger
//     than its max_bytes (409 "Message Size Exceeds MaxBytes"), no request is sent until the room
//     has grown past it, and then one asks for all the room; a message bigger than the whole budget
//     is pulled alone, once nothing else is held (batch 1, no max_bytes). Full (full()) is when no
//     request can go out for want of room: the stall warning and when_full act on it.
//   - Between one and two batches stay requested, so the next request is at the server before the
//     current one is used up; a request smaller than a batch is only sent when none is waiting, so
//     that room gathers into full batches instead of many small requests.
//   - A message arrives under its own subject, not the request's, so it cannot say which request it
//     answers. The server fills waiting requests oldest first, so it is charged to the oldest.
//   - A status reply names its request (it comes on the request's reply subject): 100 is an idle
//     heartbeat (the request is alive); 404 and 408 end the request; 409 "Batch Completed" says the
//     server sent the whole batch (the request ends as its last messages arrive, which the status
//     may overtake); 409 and its other variants end it and are worth a warning; any of them is proof
//     the server is there.
//   - Silence for kMissedHeartbeats heartbeats, or a reconnect, drops every request: the server has
//     forgotten them or cannot answer, and waiting would stall. The caller then tops up at once.
//   - A request whose expiry passed without its 408 is given back after kExpiryGrace.
//   - After anything that may mean a new consumer leader (a reconnect, a 409, silence), requests sent
//     before the new leader is up are lost, and waiting for silence to show it would cost seconds.
//     So the ledger probes: it asks for consumer info every kProbeInterval until the server
//     answers, then drops every request and pulls anew at once.
//   - A message handed back (nak'd) while one of jetfan's requests still waits at the server would
//     be delivered straight back into it, to a reader that no longer reads (seen with nats-server
//     2.9.10, which does not check; applied on every version, as no later one is known to check).
//     handback_delay() is the shortest delay that outlasts every request that may still be
//     waiting, including those dropped but not known to be finished.
//
// Thread: one owner (the daemon's io_context thread). Not thread-safe.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

#include "time.hpp"

namespace jetfan {

struct PullSettings {
  std::size_t batch = 0;             // messages asked for by one request; > 0
  std::size_t max_held = 0;          // bound on held + requested; > 0
  std::uint64_t max_held_bytes = 0;  // bound on bytes held + requested; 0: none
  Duration expires{0};               // how long a request waits at the server
  Duration idle_heartbeat{0};        // the server's heartbeat while a request waits
};

// One request to send: {"batch":batch,"max_bytes":max_bytes,"expires":expires,
// "idle_heartbeat":idle_heartbeat,"group":group,"id":pin_id} (no max_bytes, idle_heartbeat, group or
// id when 0 or empty) with the reply subject <inbox>.<id>. group and pin_id are a pinned_client
// group's (core/PinTracker): views valid until the request is sent.
struct PullRequest {
  std::uint64_t id = 0;
  std::size_t batch = 0;
  std::uint64_t max_bytes = 0;
  Duration expires{0};
  Duration idle_heartbeat{0};
  std::string_view group;
  std::string_view pin_id;
};

class PullLedger {
 public:
  // Three heartbeats: one late heartbeat under load is not a lost request; three in a row are.
  static constexpr int kMissedHeartbeats = 3;
  // A 408 for an expired request can be lost in a reconnect; this long past its expiry, its credit
  // is given back. Longer than any plausible delay of a 408 in flight.
  static constexpr Duration kExpiryGrace{2000};
  // Added to every hand-back delay: the server's clock of a request's expiry starts when the request
  // reaches it, a little after jetfan sent it.
  static constexpr Duration kHandbackMargin{250};
  // How often to ask for consumer info while waiting for a (new) leader: at first every 200ms, then
  // less often up to every 500ms, so pulling resumes within a second of the leader answering, and
  // a consumer that stays away (deleted, say) costs two requests a second.
  static constexpr Duration kProbeInterval{200};
  static constexpr Duration kProbeIntervalMax{500};

  enum class StatusOutcome {
    kAlive,            // 100: an idle heartbeat
    kFinished,         // 404, 408, 409 Batch Completed or Message Size Exceeds MaxBytes, 423 (the pin moved)
    kUnexpected,       // anything else (409 and its variants): the request is over; worth a warning
    kConsumerDeleted,  // 409 Consumer Deleted: the request is over, and so is the consumer it read
  };
  enum class Liveness {
    kFine,
    kSilent,  // nothing heard for kMissedHeartbeats heartbeats: every request was dropped
  };

  explicit PullLedger(PullSettings settings);

  // Whether top_up() might send anything: cheap enough to ask after every input.
  bool wants_more(std::size_t held) const {
    return pulling_ && requested_ < settings_.batch && held + requested_ < settings_.max_held;
  }
  // Whether jetfan holds all it may: max_held messages, or max_held_bytes (or too little room
  // left for the next message, which did not fit). Nothing more comes until something settles.
  bool full(std::size_t held, std::uint64_t held_bytes) const {
    if (held >= settings_.max_held) return true;
    const std::uint64_t budget = settings_.max_held_bytes;
    if (budget == 0 || held == 0) return false;
    return held_bytes >= budget || (too_big_for_ && room_bytes(held_bytes) <= *too_big_for_);
  }
  // Appends to `out` the requests to send now, given how many messages and bytes are held, and
  // records them as outstanding. Sends nothing once stop() was called.
  void top_up(std::size_t held, std::uint64_t held_bytes, TimePoint now, std::vector<PullRequest>& out);
  // The request could not be sent: forget it.
  void cancel(std::uint64_t id);
  // A message of `bytes` arrived: one credit of the oldest request is used.
  void on_message(TimePoint now, std::uint64_t bytes = 0);
  // A status reply arrived on request `id`'s reply subject.
  StatusOutcome on_status(std::uint64_t id, std::string_view code, std::string_view description, TimePoint now);
  // The connection to the server was re-established: the server may have forgotten every request.
  void on_reconnect(TimePoint now);
  // Drops what the server can no longer answer; call now and then (every few hundred ms).
  Liveness check_liveness(TimePoint now);
  // No more requests from now on (draining). Requests already at the server stay until they end.
  void stop() { pulling_ = false; }

  // The consumer's leader may have changed: probe until it answers (see above).
  void on_leader_unsure(TimePoint now);
  bool probing() const { return probing_; }
  // A probe to send now, if one is due (it is counted as sent): its id names its reply.
  std::optional<std::uint64_t> take_probe(TimePoint now);
  // When the next probe is due, while probing.
  std::optional<TimePoint> next_probe() const;
  // The answer to a probe. True when the leader answered: every request was dropped, top up now.
  bool on_probe_answer(bool ok, TimePoint now);

  Duration handback_delay(TimePoint now) const;
  std::size_t requested() const { return requested_; }
  std::uint64_t requested_bytes() const { return requested_bytes_; }
  std::size_t outstanding() const { return pulls_.size(); }
  // Bytes of max_held_bytes neither held nor asked for by a request still open.
  std::uint64_t room_bytes(std::uint64_t held_bytes) const {
    const std::uint64_t used = held_bytes + requested_bytes_;
    return used < settings_.max_held_bytes ? settings_.max_held_bytes - used : 0;
  }
  const PullSettings& settings() const { return settings_; }
  // When request `id` was sent, while it is outstanding.
  std::optional<TimePoint> sent_at(std::uint64_t id) const {
    const auto found = pulls_.find(id);
    if (found == pulls_.end()) return std::nullopt;
    return found->second.expires - settings_.expires;
  }

 private:
  struct Pull {
    std::size_t remaining;
    std::uint64_t remaining_bytes;  // 0 when the request has no max_bytes
    std::uint64_t max_bytes;
    TimePoint expires;
  };
  void retire(std::map<std::uint64_t, Pull>::iterator pull);
  void drop_all(TimePoint now);

  PullSettings settings_;
  std::map<std::uint64_t, Pull> pulls_;  // by id: the oldest first
  std::size_t requested_ = 0;
  std::uint64_t requested_bytes_ = 0;
  // A request of this max_bytes ended before a bigger message: wait for more room than that.
  std::optional<std::uint64_t> too_big_for_;
  std::uint64_t next_id_ = 1;
  bool pulling_ = true;
  TimePoint last_heard_{};
  // Requests dropped without the server saying they ended may still wait there until this.
  std::optional<TimePoint> dropped_until_;
  bool probing_ = false;
  TimePoint next_probe_{};
  Duration probe_interval_ = kProbeInterval;
  std::uint64_t next_probe_id_ = 1;
};

}  // namespace jetfan
