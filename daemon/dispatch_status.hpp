#pragma once
// DispatchStatus: what `jetfan status`, `STATUS JSON` and /metrics show of a serving jetfan, built
// into a StatusSnapshot only when asked for (observe/ renders it). It reads the dispatcher's parts
// (the core, the pull ledger, the handler table, the dead-letter jobs, the full watch, the publisher) through const
// references, and keeps the few figures only the dispatcher sees as messages pass: reconnects, the
// age of each message at arrival, and messages an ordered handler got without an order key.
//
// Thread: the io_context thread only. Every part must outlive it.

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "config.hpp"
#include "dead_letter_jobs.hpp"
#include "dispatch_core.hpp"
#include "full_watch.hpp"
#include "handler_publisher.hpp"
#include "handler_table.hpp"
#include "histogram.hpp"
#include "message_bytes.hpp"
#include "pull_ledger.hpp"
#include "rate_window.hpp"
#include "serve_settings.hpp"
#include "status_snapshot.hpp"

namespace jetfan {

class DispatchStatus {
 public:
  struct Parts {
    const Config& config;
    const ServeSettings& settings;
    const DispatchCore& core;
    const PullLedger& ledger;
    const HandlerTable& table;
    const DeadLetterJobs& jobs;
    const FullWatch& full;
    const MessageBytesArena& arena;
    const HandlerPublisher& publisher;
  };
  explicit DispatchStatus(Parts parts) : parts_(parts), without_order_key_(parts.config.handlers.size(), 0) {}

  void reconnected() { ++reconnects_; }
  // A message arrived `age` after the stream stored it (JetStream's timestamp against jetfan's clock).
  void arrived_aged(std::chrono::nanoseconds age) { publish_age_.observe(age); }
  // An ordered handler got a message without an order key (unordered).
  void without_order_key(std::size_t handler) { ++without_order_key_.at(handler); }
  // A reload gave the handlers new indices (HandlerReindex::old_to_new); `handlers` of them now.
  void reindex(const std::vector<std::optional<std::size_t>>& old_to_new, std::size_t handlers);

  // Fills the snapshot's dispatch figures and one HandlerView per declared handler. `state`:
  // "serving", "draining" or "stopped".
  void fill(StatusSnapshot& snapshot, std::string_view state, const RateWindow& rates, TimePoint now,
            std::int64_t now_unix_ms) const;
  // Each handler's figures by name, for the rates over the last minute.
  std::vector<RateWindow::Named> named_stats() const;

 private:
  Parts parts_;
  std::uint64_t reconnects_ = 0;
  LatencyHistogram publish_age_;
  std::vector<std::uint64_t> without_order_key_;  // per handler
};

}  // namespace jetfan
