#pragma once
// LedgerWriter: the confirmation ledger's I/O while jetfan serves (issue 39). The decisions are
// ConfirmationLedger's (core/confirmation_ledger.hpp): what to write and when. This type tells it
// what happened (a handler's confirmation of a message still held, a message settled at the
// server, the records read at start), sends what it says is due as publishes to the key-value
// bucket through the Upstream (jetstream/ledger_record.hpp: a put is a message on "$KV.B.D.S", a
// delete one with "KV-Operation: DEL"), and gives it the server's answers.
//
// Off the critical path: nothing here decides an ack or holds a message. A write that fails, or
// is not answered within kAnswerTimeout, is counted, logged (rate-limited) and tried again later;
// while writes keep failing, not_written() says so for status. At worst a handler gets a message
// again after a restart, as without a ledger.
//
// Its publish ids carry kIdBit (bit 63), apart from HandlerPublisher's (bit 60 alone),
// UnreadableMessages' (bit 61) and dead letters' (none): Dispatcher::on_published routes by owns().
//
// Thread: the Dispatcher's io thread. `upstream` and `warnings` must outlive it.

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "config.hpp"
#include "confirmation_ledger.hpp"
#include "rate_limited_log.hpp"
#include "status_snapshot.hpp"
#include "upstream.hpp"

namespace jetfan {

class LedgerWriter {
 public:
  static constexpr std::uint64_t kIdBit = std::uint64_t{1} << 63;
  static bool owns(std::uint64_t id) { return (id & kIdBit) != 0; }
  // A write the server has not answered in this long counts as failed (the connection may have
  // gone with it): it is tried again.
  static constexpr Duration kAnswerTimeout{5000};

  LedgerWriter(const LedgerConfig& config, std::string durable, Upstream& upstream, RateLimitedLog& warnings);

  // The handlers that have confirmed `seq` by now (none when it is settled or forgotten): what the
  // dispatcher's core knows, asked when a message's first confirmation has stayed an interval.
  using ConfirmedNow = std::function<std::vector<std::string_view>(std::uint64_t seq)>;

  // `handler` confirmed (ACK or TERM) stream seq `seq`, which some other handler still owes;
  // `first`: no handler had before. The common case costs a note of the first confirmation and
  // nothing more: the message is looked at again an interval later (write_due), and only if some
  // handler still owes it then does the ledger hear of its confirmations. Once it has, it hears of
  // each one at once.
  void confirmed(std::uint64_t seq, std::string_view handler, bool first, TimePoint now);
  // Message `seq` was acked or terminated at the server.
  void settled(std::uint64_t seq, TimePoint now) { ledger_.settled(seq, now); }
  // The records read at start or at a takeover (daemon/LedgerReader); those at or below `ack_floor` will
  // not come again and are left to the bucket's TTL.
  void load(const std::vector<LedgerRecord>& records, std::uint64_t ack_floor);

  // Hands the ledger the first confirmations that stayed an interval and are not settled (asking
  // `confirmed_now`), and sends what is due at `now`.
  void write_due(TimePoint now, const ConfirmedNow& confirmed_now);
  // As jetfan stops: sends everything queued, due or not (ConfirmationLedger::take_all), without
  // waiting for answers. Partly confirmed messages are handed back now: their records count most.
  void write_all(TimePoint now, const ConfirmedNow& confirmed_now);
  // When write_due next has something to send, if anything waits.
  std::optional<TimePoint> next_due() const;
  void on_published(std::uint64_t id, const PublishResult& result, TimePoint now);
  // Writes unanswered for kAnswerTimeout fail (and are tried again).
  void time_out(TimePoint now);

  // Why the ledger is not being written now (the last failure, and since when); "" when it is.
  std::string not_written(TimePoint now) const;
  StatusSnapshot::Ledger view(TimePoint now) const;
  const ConfirmationLedger& ledger() const { return ledger_; }

 private:
  struct Sent {
    LedgerChange change;
    TimePoint at;
  };
  // Publishes `changes`; `answered`: their answers are waited for (else they are left to the server).
  void send(std::vector<LedgerChange> changes, TimePoint now, bool answered);
  void failed(const LedgerChange& change, std::string_view why, TimePoint now);

  const LedgerConfig& config_;
  std::string durable_;
  Upstream& upstream_;
  RateLimitedLog& warnings_;
  ConfirmationLedger ledger_;
  std::uint64_t next_id_ = 1;
  std::unordered_map<std::uint64_t, Sent> sent_;                // by id, with kIdBit
  std::deque<std::pair<TimePoint, std::uint64_t>> sent_order_;  // (sent at, id), oldest first
  // First confirmations, (made at, seq), oldest first; at most config.max_records.
  std::deque<std::pair<TimePoint, std::uint64_t>> firsts_;
  std::uint64_t dropped_firsts_ = 0;        // past max_records
  std::optional<TimePoint> failing_since_;  // the first failure since the last success
  std::string last_error_;
};

}  // namespace jetfan
