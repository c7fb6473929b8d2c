#pragma once
// ConfirmationLedger: what jetfan is to write to its confirmation ledger, and what it read from it
// (issue 39). The ledger is a JetStream key-value bucket holding, for a message still held for
// some handlers, the names of the handlers that have confirmed it, so that a jetfan started again,
// on this host or on a standby, does not hand that message again to a handler that confirmed it.
// This type decides; the I/O (the bucket's puts, deletes and reads) is the caller's.
//
// What is written, and when. A message every handler confirms within `interval` of its first
// confirmation costs a map entry for that time and no write. One still partly confirmed after
// `interval` gets a record (a put), and a record is put again, `interval` after a change, when
// another handler confirms. Once the message is settled at the server its record, if one was
// written (or loaded), is deleted; one never written is forgotten at once. Changes are handed out
// by take_due(), never more than `max_in_flight` waiting for the server; a change that failed is
// tried again `interval` later. Failures cost at most a duplicate: the ledger only ever removes
// deliveries, and never decides an ack.
//
// Bounds. At most `max_records` messages are tracked, and as many loaded records kept; past that a
// confirmation is not recorded (counted as dropped): that message may come again to the handler
// after a restart, as without a ledger. Handlers are known by name (a record outlives a config
// change between runs); at most kMaxNames distinct names are recorded, the rest dropped likewise.
//
// What is read. At start, and at a takeover, the caller loads this durable's records (load()), and
// gives the same records to DispatchCore::remember_confirmed: the core decides who gets a message
// that arrives again. The ledger keeps what it loaded only to rewrite or delete those records;
// confirmed_before(seq) names them by handler (for status and tests).
// Records of messages below the consumer's ack floor will not come again: forget_below() drops them
// from memory (the bucket's max_age removes them there).
//
// Pure: no I/O, no clock; time comes in as values. Thread: its owner's (the Dispatcher's io thread).

#include <bitset>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "time.hpp"

namespace jetfan {

struct LedgerSettings {
  Duration interval{1000};
  std::size_t max_in_flight = 64;
  std::size_t max_records = 100000;
};

// One change for the bucket. A put carries every handler that confirmed the message, sorted.
struct LedgerChange {
  enum class Kind { kPut, kDelete };
  Kind kind = Kind::kPut;
  std::uint64_t seq = 0;
  std::vector<std::string> handlers;
  std::uint64_t version = 0;  // for written(): which state of the record this was
};

// A record as read from the bucket (daemon/LedgerReader): these handlers confirmed stream seq `seq`.
struct LedgerRecord {
  std::uint64_t seq = 0;
  std::vector<std::string> handlers;
};

struct LedgerCounts {
  std::uint64_t puts = 0;     // written
  std::uint64_t deletes = 0;  // deleted
  std::uint64_t failed = 0;   // changes the server did not take (tried again)
  std::uint64_t dropped = 0;  // confirmations not recorded: past max_records or kMaxNames
  std::uint64_t loaded = 0;   // records read at start or takeover
};

class ConfirmationLedger {
 public:
  static constexpr std::size_t kMaxNames = 64;

  explicit ConfirmationLedger(LedgerSettings settings) : settings_(settings) {}

  // `handler` confirmed message `seq` at `at` (now, or earlier: the caller may hand on a message's
  // first confirmations only once they stayed an interval, daemon/LedgerWriter), and the message is
  // still held for another handler. Its record is due at `at` + interval.
  void confirmed(std::uint64_t seq, std::string_view handler, TimePoint at);
  // Whether `seq` has an entry or a loaded record: its further confirmations must be told at once.
  bool tracks(std::uint64_t seq) const {
    return !(entries_.empty() && loaded_.empty()) && (entries_.contains(seq) || loaded_.contains(seq));
  }
  // Message `seq` is settled at the server (acked, terminated, dead-lettered): no record is needed.
  void settled(std::uint64_t seq, TimePoint now);

  // The changes due at `now`, each waiting for written() from then on.
  std::vector<LedgerChange> take_due(TimePoint now);
  // As jetfan stops: every change queued, due or not and past max_in_flight, puts first (they keep
  // duplicates away; a delete only tidies what the bucket's TTL removes too). What is tracked is
  // forgotten: nothing waits for the answers.
  std::vector<LedgerChange> take_all();
  // The server's answer to a change take_due() gave: `ok` when it took it.
  void written(const LedgerChange& change, bool ok, TimePoint now);
  // When take_due() next has something, if anything waits (nullopt: nothing, or only what waits
  // for the server).
  std::optional<TimePoint> next_due() const;

  // A record read from the bucket: these handlers confirmed `seq` before.
  void load(std::uint64_t seq, const std::vector<std::string>& handlers);
  // The handlers that confirmed `seq` in an earlier run (loaded) or in this one; empty if none.
  std::vector<std::string> confirmed_before(std::uint64_t seq) const;
  // Messages below `seq` are settled for good: what is kept of them in memory goes (no change).
  void forget_below(std::uint64_t seq);

  std::size_t tracked() const { return entries_.size(); }
  std::size_t waiting_for_server() const { return in_flight_; }
  const LedgerCounts& counts() const { return counts_; }

 private:
  using Names = std::bitset<kMaxNames>;
  struct Entry {
    Names handlers;
    std::uint64_t version = 0;  // bumped with each change of `handlers`
    std::uint64_t stored = 0;   // the version the bucket holds; 0: none
    bool in_flight = false;
    bool settled = false;
    bool queued = false;  // in due_
  };

  std::optional<std::size_t> name_id(std::string_view handler);
  std::vector<std::string> names_of(const Names& handlers) const;
  void queue(std::uint64_t seq, Entry& entry, TimePoint due);

  LedgerSettings settings_;
  std::vector<std::string> names_;  // interned handler names; an id is an index
  std::unordered_map<std::uint64_t, Entry> entries_;
  // A min-heap by due time (std::push_heap with std::greater): confirmations come with their own time.
  std::vector<std::pair<TimePoint, std::uint64_t>> due_;
  std::map<std::uint64_t, Names> loaded_;
  std::size_t in_flight_ = 0;
  LedgerCounts counts_;
};

}  // namespace jetfan
