#pragma once
// LedgerReader: reads the confirmation ledger's records of this durable from its key-value bucket
// (issue 39; core/confirmation_ledger.hpp, jetstream/ledger_record.hpp), through cnats's
// key-value watcher: the last value of every key "<durable>.>", deletes left out, up to the marker
// that says all initial values came. At start, and when a pinned_client standby takes over.
//
// A read that fails is logged and costs nothing but duplicates: what the ledger would have kept
// from handlers comes to them again, as without a ledger.
//
// Thread: the io_context thread, while it may wait (NatsBlocking::wait_off_thread). `config` and
// `nats` must outlive it. Precondition: config.ledger is set.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config.hpp"
#include "confirmation_ledger.hpp"
#include "nats_blocking.hpp"

namespace jetfan {

class LedgerReader {
 public:
  LedgerReader(const Config& config, NatsBlocking& nats) : config_(config), nats_(nats) {}

  // Every record of the durable, in no set order; nullopt (logged) when the bucket could not be
  // read in `budget`, or held more than `limit` records. Records that cannot be read are skipped,
  // and how many is logged.
  std::optional<std::vector<LedgerRecord>> read(std::size_t limit, Duration budget);

 private:
  const Config& config_;
  NatsBlocking& nats_;
  std::uint64_t unreadable_ = 0;
};

}  // namespace jetfan
