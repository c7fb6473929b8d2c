#include "dispatch_status.hpp"

namespace jetfan {

void DispatchStatus::reindex(const std::vector<std::optional<std::size_t>>& old_to_new, std::size_t handlers) {
  std::vector<std::uint64_t> without_order_key(handlers, 0);
  for (std::size_t old = 0; old < old_to_new.size(); ++old) {
    if (old_to_new[old]) without_order_key.at(*old_to_new[old]) = without_order_key_.at(old);
  }
  without_order_key_ = std::move(without_order_key);
}

std::vector<RateWindow::Named> DispatchStatus::named_stats() const {
  std::vector<RateWindow::Named> named;
  for (std::size_t h = 0; h < parts_.config.handlers.size(); ++h) {
    named.push_back(RateWindow::Named{parts_.config.handlers[h].name, &parts_.core.handler_stats(h)});
  }
  return named;
}

void DispatchStatus::fill(StatusSnapshot& s, std::string_view state, const RateWindow& rates, TimePoint now,
                          std::int64_t now_unix_ms) const {
  const auto& [config_, settings_, core_, ledger_, table_, jobs_, full_, arena_, publisher_] = parts_;
  s.state = std::string(state);
  s.ready = state == "serving";
  s.ack_policy = to_string(settings_.core.ack_policy);
  s.ack_wait_seconds = std::chrono::duration<double>(settings_.ack_wait).count();
  s.max_deliver = settings_.core.max_deliver;
  s.totals = core_.counters();
  s.held = core_.held();
  s.held_bytes = arena_.bytes;
  s.max_held = settings_.pull.max_held;
  s.max_held_bytes = settings_.pull.max_held_bytes;
  s.in_flight = core_.in_flight();
  auto age = [now](TimePoint since) { return std::chrono::duration<double>(now - since).count(); };
  if (const auto oldest = core_.oldest_held()) s.oldest_held_seconds = age(*oldest);
  s.pulls_outstanding = ledger_.outstanding();
  s.pull_batch = settings_.pull.batch;
  const StallWatch& stall = full_.stall();
  if (stall.stalled() && stall.full_since() && stall.stalled_by() < config_.handlers.size()) {
    s.stall = StatusSnapshot::Stall{config_.handlers[stall.stalled_by()].name, age(*stall.full_since())};
  }
  s.reconnects = reconnects_;
  s.publish_age = publish_age_;

  const auto loads = core_.loads();
  const auto waits = core_.order_waits();
  for (std::size_t h = 0; h < config_.handlers.size(); ++h) {
    const HandlerSettings& declared = config_.handlers[h];
    HandlerView view;
    view.name = declared.name;
    view.patterns = declared.patterns;
    view.max_inflight = static_cast<std::uint32_t>(declared.max_inflight);
    view.max_rate = declared.max_rate;
    view.ack_timeout_seconds = std::chrono::duration<double>(declared.ack_timeout).count();
    view.instances = table_.instance_views(h, now_unix_ms);
    view.in_flight = loads[h].in_flight;
    view.queued = loads[h].queued;
    view.backlog = loads[h].owed;
    view.rate_waiting = loads[h].rate_waiting;
    view.adaptive_inflight = declared.adaptive_inflight;
    view.min_inflight = static_cast<std::uint32_t>(declared.min_inflight);
    view.inflight_limit = loads[h].inflight_limit;
    if (loads[h].last_cut) {
      view.last_cut = cut_name(*loads[h].last_cut);
      view.last_cut_seconds = age(loads[h].last_cut_at);
    }
    if (loads[h].oldest_unconfirmed) view.oldest_unconfirmed_seconds = age(*loads[h].oldest_unconfirmed);
    if (declared.order_by.kind != OrderBy::Kind::kNone) view.order_by = to_string(declared.order_by);
    view.order_blocked_keys = waits[h].load.blocked_keys;
    view.order_waiting = waits[h].load.waiting;
    if (waits[h].oldest) view.order_oldest_wait_seconds = age(*waits[h].oldest);
    view.without_order_key = without_order_key_.at(h);
    view.stats = core_.handler_stats(h);
    view.paused = core_.paused(h);
    view.max_attempts = config_.handlers[h].retry ? config_.handlers[h].retry->max_attempts : 0;
    view.dead_letter_subject = config_.handlers[h].dead_letter_subject;
    if (const auto redrives = jobs_.counts().find(view.name); redrives != jobs_.counts().end()) {
      view.redrive_running = redrives->second.running;
      view.redrive_confirmed = redrives->second.confirmed;
      view.redrive_again = redrives->second.again;
      view.redrive_kept = redrives->second.kept;
      view.redrive_refused = redrives->second.refused;
    }
    if (declared.publish) view.publish_subjects = declared.publish->subjects;
    if (const auto published = publisher_.stats().find(view.name); published != publisher_.stats().end()) {
      view.publishes = published->second;
    }
    if (const SocketIo* io = table_.socket_io(view.name)) {
      view.socket_writes = io->writes;
      view.socket_written_bytes = io->written_bytes;
      view.socket_reads = io->reads;
      view.socket_read_bytes = io->read_bytes;
    }
    view.rates = rates.rates(view.name, view.stats, now);
    s.handlers.push_back(std::move(view));
  }
}

}  // namespace jetfan
