// Dispatcher, continued: what the control plane asks of it (status figures, tail records) and a
// reload applied. Kept apart from the message path in dispatcher.cpp.

#include <algorithm>

#include <spdlog/spdlog.h>

#include "dispatcher.hpp"

namespace jetfan {

void Dispatcher::observe(const HeldMessage& stored, HandlerMask recipients) {
  if (recipients == 0) observer_->on_no_recipient(stored.key);
  if (!observer_->tailing()) return;
  observer_->on_tail(TailItem{wall_now_ns_ / 1'000'000, stored.key, stored.stream_seq, stored.deliveries,
                              stored.message->headers(), stored.message->payload(), recipients, false});
}

void Dispatcher::observe_unroutable(const InboundMessage& message) {
  const MessageBytes& bytes = *message.bytes;
  observer_->on_unroutable(bytes.subject());
  if (!observer_->tailing()) return;
  observer_->on_tail(TailItem{
      wall_now_ns_ / 1'000'000, bytes.subject(), message.stream_seq, message.deliveries, {}, bytes.payload(), 0, true});
}

std::vector<RateWindow::Named> Dispatcher::named_stats() const {
  std::vector<RateWindow::Named> named;
  for (std::size_t h = 0; h < config_.handlers.size(); ++h) {
    named.push_back(RateWindow::Named{config_.handlers[h].name, &core_.handler_stats(h)});
  }
  return named;
}

void Dispatcher::fill_status(StatusSnapshot& s, const RateWindow& rates, TimePoint now,
                             std::int64_t now_unix_ms) const {
  s.state = state_ == State::kServing ? "serving" : state_ == State::kDraining ? "draining" : "stopped";
  s.ready = state_ == State::kServing;
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
  if (stall_.stalled() && stall_.full_since() && stall_.stalled_by() < config_.handlers.size()) {
    s.stall = StatusSnapshot::Stall{config_.handlers[stall_.stalled_by()].name, age(*stall_.full_since())};
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
    view.ack_timeout_seconds = std::chrono::duration<double>(declared.ack_timeout).count();
    view.instances = table_.instance_views(h, now_unix_ms);
    view.in_flight = loads[h].in_flight;
    view.queued = loads[h].queued;
    if (loads[h].oldest_unconfirmed) view.oldest_unconfirmed_seconds = age(*loads[h].oldest_unconfirmed);
    if (declared.order_by.kind != OrderBy::Kind::kNone) view.order_by = to_string(declared.order_by);
    view.order_blocked_keys = waits[h].load.blocked_keys;
    view.order_waiting = waits[h].load.waiting;
    if (waits[h].oldest) view.order_oldest_wait_seconds = age(*waits[h].oldest);
    view.without_order_key = without_order_key_.at(h);
    view.stats = core_.handler_stats(h);
    view.paused = paused(h);
    view.max_attempts = config_.handlers[h].retry ? config_.handlers[h].retry->max_attempts : 0;
    view.dead_letter_subject = config_.handlers[h].dead_letter_subject;
    if (const auto redrives = jobs_.counts().find(view.name); redrives != jobs_.counts().end()) {
      view.redrive_running = redrives->second.running;
      view.redrive_confirmed = redrives->second.confirmed;
      view.redrive_again = redrives->second.again;
      view.redrive_kept = redrives->second.kept;
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

std::vector<std::string> Dispatcher::apply_reload(const ReloadPlan& plan, ServeSettings settings) {
  JETFAN_ON_IO_THREAD(thread_);
  std::vector<std::string> lines;
  // Instances of removed handlers are sent ERR and closed; the others move to their new index.
  std::vector<std::size_t> dismissed_per_old;
  const auto dismissed = table_.reindex(plan.old_to_new, config_.handlers.size(), dismissed_per_old);
  std::vector<std::uint64_t> without_order_key(config_.handlers.size(), 0);
  for (std::size_t old = 0; old < plan.old_to_new.size(); ++old) {
    if (plan.old_to_new[old]) without_order_key[*plan.old_to_new[old]] = without_order_key_[old];
  }
  without_order_key_ = std::move(without_order_key);
  router_ = make_router(config_);
  settings_.admission = std::move(settings.admission);
  settings_.core.handlers = settings.core.handlers;
  settings_.core.nak_delay = settings.core.nak_delay;
  settings_.core.nak_delay_max = settings.core.nak_delay_max;
  const ReindexOutcome outcome = core_.reconfigure(
      HandlerReindex{plan.old_to_new, settings.core.handlers, settings.core.nak_delay, settings.core.nak_delay_max},
      time_.now());

  std::size_t removed = 0;
  for (std::size_t old = 0; old < plan.old_to_new.size(); ++old) {
    if (plan.old_to_new[old]) continue;
    const std::string& name = plan.removed.at(removed++);
    lines.push_back("handler \"" + name + "\" removed: " + std::to_string(outcome.released[old]) +
                    " held message(s) it had not confirmed are settled as if it had; " +
                    std::to_string(dismissed_per_old[old]) + " instance(s) sent ERR and disconnected");
  }
  for (const auto& session : dismissed) {
    session->dismiss("handler \"" + session->handler_name() + "\" was removed from jetfan's config by a reload");
  }
  after_input();
  return lines;
}

std::optional<std::string> Dispatcher::set_paused(const std::string& name, bool pause) {
  JETFAN_ON_IO_THREAD(thread_);
  for (std::size_t h = 0; h < config_.handlers.size(); ++h) {
    if (config_.handlers[h].name != name) continue;
    const bool was = core_.paused(h);
    core_.set_paused(h, pause, time_.now());
    settings_.core.handlers[h].paused = pause;
    const std::size_t owed = core_.loads()[h].owed;
    std::string what = "handler \"" + name + "\" " + (was == pause ? "was already " : "") +
                       (pause ? "paused: it gets nothing new; " + std::to_string(owed) + " held message(s) wait for it"
                              : "resumed: " + std::to_string(owed) + " held message(s) it owes go to it now");
    log_info(pause ? "handler.paused" : "handler.resumed", {{"handler", name}, {"held", owed}}, "{}", what);
    after_input();
    return what;
  }
  return std::nullopt;
}

}  // namespace jetfan
