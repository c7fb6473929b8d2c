#include "full_watch.hpp"

#include "logging.hpp"

namespace jetfan {
namespace {

// Full with nothing settling this long is a stall worth a warning; it repeats this often.
constexpr Duration kStallAfter{5000};
constexpr Duration kFullWarningEvery{30000};
// An ordered handler's key that waits longer than this many ack_timeouts is worth a warning.
constexpr int kBlockedKeyAckTimeouts = 3;

}  // namespace

FullWatch::FullWatch(const Config& config, const PullSettings& pull, RateLimitedLog& warnings)
    : config_(config),
      pull_(pull),
      warnings_(warnings),
      stall_(kStallAfter),
      stall_warnings_(1, kFullWarningEvery),
      key_warnings_(1, kFullWarningEvery) {}

void FullWatch::warn_blocked_keys(const DispatchCore& core, TimePoint now) {
  bool any = false;
  for (const auto& handler : config_.handlers) any = any || handler.order_by.kind != OrderBy::Kind::kNone;
  if (!any) return;
  const auto waits = core.order_waits();
  for (std::size_t h = 0; h < waits.size() && h < config_.handlers.size(); ++h) {
    const HandlerSettings& handler = config_.handlers[h];
    if (!waits[h].oldest || now - *waits[h].oldest < kBlockedKeyAckTimeouts * handler.ack_timeout) continue;
    const auto verdict = key_warnings_.allow(handler.name, now);
    if (!verdict.log) continue;
    log_warn(
        "order.key_blocked", {{"handler", handler.name}, {"key", waits[h].key}, {"seq", waits[h].waits_for}},
        "handler \"{}\" (order_by {}): a message of order key \"{}\" has waited {}s for stream seq {}, the oldest of "
        "that key it owes, to be settled by it; {} key(s) are blocked so, {} message(s) wait behind them. Other "
        "keys and handlers go on.",
        handler.name, to_string(handler.order_by), waits[h].key,
        std::chrono::duration_cast<std::chrono::seconds>(now - *waits[h].oldest).count(), waits[h].waits_for,
        waits[h].load.blocked_keys, waits[h].load.waiting);
  }
}

void FullWatch::act(DispatchCore& core, bool full, std::size_t held_bytes, TimePoint now) {
  const std::size_t max_held = pull_.max_held;
  std::vector<HandlerLoad> loads;
  std::size_t handed_back = 0;
  if (full) {
    loads = core.loads();
    std::vector<bool> hands_back;
    // An ordered handler that jetfan itself holds back (after a restart, a reconnect or a leader
    // change) is not slow: waiting for it would stall every handler until reconnects stop. Its
    // backlog goes back as when_full: hand_back's does, newest first, which keeps its order.
    const bool held_back = core.awaiting_outstanding();
    for (const auto& handler : config_.handlers) {
      hands_back.push_back(handler.when_full == WhenFull::kHandBack ||
                           (held_back && handler.order_by.kind != OrderBy::Kind::kNone));
    }
    for (const HandBackOrder& order : hand_backs_when_full(loads, hands_back, core.held_for_room())) {
      const std::size_t handed = core.hand_back_for_room(order.handler, order.keep, now);
      handed_back += handed;
      if (handed == 0) continue;
      const std::string& name = config_.handlers[order.handler].name;
      warnings_.warn(
          now, "hand-backs for room of handler \"" + name + "\"", "handler.handed_back",
          {{"handler", name}, {"owed", order.owed}, {"keep", order.keep}, {"handed_back", handed}},
          "the consumer is full and handler \"{}\" owed {} messages, more than its share of {}: handed back "
          "its {} {} to the server ({}); only it gets them again, each a delivery more against MaxDeliver",
          name, order.owed, order.keep, handed,
          config_.handlers[order.handler].order_by.kind == OrderBy::Kind::kNone ? "oldest" : "newest (ordered)",
          config_.handlers[order.handler].when_full == WhenFull::kHandBack
              ? "when_full: hand_back"
              : "jetfan holds this ordered handler back after a restart, reconnect or leader change");
    }
  }
  const auto& c = core.counters();
  const std::uint64_t settled = c.acked + c.terminated + c.nakked + c.no_recipient;
  const auto verdict = stall_.look(full, settled, handed_back > 0, loads, now);
  if (verdict.kind == StallWatch::Verdict::Kind::kRecovered) {
    log_info("pull.resumed", {{"held", core.held()}, {"held_bytes", held_bytes}},
             "holding {} messages of {} bytes, below max_held ({}) and max_held_bytes ({}) again: pulling again",
             core.held(), held_bytes, max_held, pull_.max_held_bytes);
  }
  if (verdict.kind != StallWatch::Verdict::Kind::kStalled) return;
  if (!stall_warnings_.allow("full", now).log && !verdict.first) return;
  const auto& b = loads[verdict.handler];
  const auto age =
      b.oldest_unconfirmed ? std::chrono::duration_cast<std::chrono::seconds>(now - *b.oldest_unconfirmed).count() : 0;
  const std::string limit = core.held() >= max_held ? "max_held (" + std::to_string(max_held) + ")"
                                                    : "max_held_bytes (" + std::to_string(pull_.max_held_bytes) + ")";
  log_warn("pull.stalled",
           {{"handler", config_.handlers[verdict.handler].name},
            {"held", core.held()},
            {"owed", b.owed},
            {"in_flight", b.in_flight},
            {"connections", b.connections}},
           "jetfan holds {} messages ({} bytes), all that {} allows, and none has settled for {}s, so it pulls "
           "no more: handler \"{}\" owes {} of them ({} in flight), the oldest for {}s, with {} instance(s) "
           "connected. Every other handler waits with it. Start or unstick it, or set when_full: hand_back for "
           "it to hand its backlog back to the server.",
           core.held(), held_bytes, limit,
           std::chrono::duration_cast<std::chrono::seconds>(now - *stall_.full_since()).count(),
           config_.handlers[verdict.handler].name, b.owed, b.in_flight, age, b.connections);
}

}  // namespace jetfan
