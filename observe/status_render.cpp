#include "status_render.hpp"

#include <nlohmann/json.hpp>

#include "format.hpp"
#include "token_bucket.hpp"

namespace jetfan {
namespace {

// Members in the order CONTROL.md documents them, not sorted.
using json = nlohmann::ordered_json;

std::string joined(const std::vector<std::string>& items, const char* separator) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

std::string max_deliver(std::int64_t value) { return value > 0 ? std::to_string(value) : "unlimited"; }

// The smallest bucket bound below which `share` of the observations fall, as "≤ 5ms"; "-" if none.
std::string quantile(const LatencyHistogram& histogram, double share) {
  if (histogram.count() == 0) return "-";
  const auto wanted = static_cast<std::uint64_t>(static_cast<double>(histogram.count()) * share + 0.999999);
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < LatencyHistogram::kBoundsMicros.size(); ++i) {
    seen += histogram.bucket(i);
    if (seen >= wanted) return "<= " + format::duration(static_cast<double>(LatencyHistogram::kBoundsMicros[i]) / 1e6);
  }
  return "> " + format::duration(static_cast<double>(LatencyHistogram::kBoundsMicros.back()) / 1e6);
}

std::string count_and_rate(const char* name, std::uint64_t count, double rate) {
  return std::string(name) + " " + std::to_string(count) + " (" + format::rate(rate) + "/s)";
}

json optional_seconds(const std::optional<double>& seconds) { return seconds ? json(*seconds) : json(nullptr); }

// Buckets by upper bound ("1", "2", ..., "+Inf"), not cumulative, with count and sum.
json attempts_json(const AttemptsHistogram& h) {
  json buckets = json::object();
  for (std::size_t i = 0; i < AttemptsHistogram::kBuckets; ++i) {
    const std::string bound =
        i < AttemptsHistogram::kBounds.size() ? std::to_string(AttemptsHistogram::kBounds[i]) : std::string("+Inf");
    buckets[bound] = h.bucket(i);
  }
  return {{"count", h.count()}, {"sum", h.sum()}, {"buckets", buckets}};
}

// The adaptive limit's cuts of a handler, by cause, as status and its JSON name them.
constexpr AdaptiveLimit::Cut kCutCauses[] = {AdaptiveLimit::Cut::kNak, AdaptiveLimit::Cut::kTimeout,
                                             AdaptiveLimit::Cut::kLatency};
std::uint64_t cuts_of(const HandlerView& h, AdaptiveLimit::Cut cause) {
  return h.stats.inflight_cuts[static_cast<std::size_t>(cause)];
}
json cuts_json(const HandlerView& h) {
  json cuts = json::object();
  for (const auto cause : kCutCauses) cuts[cut_name(cause)] = cuts_of(h, cause);
  return cuts;
}

// The ledger never decides an ack, so what its outage costs is said with it: an operator should
// not mistake it for lost messages, nor ignore the duplicates it brings after a restart.
std::string ledger_not_written(const StatusSnapshot::Ledger& ledger) {
  return "the confirmation ledger (bucket " + ledger.bucket + ") is not being written: " + ledger.not_written +
         "; after a restart, handlers may get again messages they confirmed (duplicates, never lost messages)";
}

}  // namespace

std::vector<std::string> status_problems(const StatusSnapshot& s) {
  std::vector<std::string> problems = s.not_consuming;
  if (s.state == "starting") problems.push_back("not serving yet: connecting to NATS and binding the consumer");
  if (s.state == "draining") problems.push_back("draining: jetfan is stopping and takes no new messages");
  if (s.stall) {
    problems.push_back("jetfan holds all it may and nothing has settled for " + format::duration(s.stall->seconds) +
                       ": handler \"" + s.stall->handler +
                       "\" holds everyone up; unstick it, or set when_full: hand_back for it");
  }
  for (const auto& h : s.handlers) {
    if (!h.instances.empty()) continue;
    const std::size_t waiting = h.queued + h.in_flight;
    if (waiting == 0) continue;
    problems.push_back("handler \"" + h.name + "\" has no instance connected and " + std::to_string(waiting) +
                       " message(s) waiting for it" +
                       (h.oldest_unconfirmed_seconds
                            ? ", the oldest for " + format::duration(*h.oldest_unconfirmed_seconds)
                            : std::string()) +
                       ": start it, or check that it connects to the socket");
  }
  if (s.state == "serving" && !s.handlers.empty()) {
    bool any = false;
    for (const auto& h : s.handlers) any = any || !h.instances.empty();
    if (!any) problems.push_back("no handler is connected");
  }
  if (s.ledger && !s.ledger->not_written.empty()) problems.push_back(ledger_not_written(*s.ledger));
  return problems;
}

std::string render_status_text(const StatusSnapshot& s) {
  std::string out;
  auto line = [&out](const std::string& text) { out += text + "\n"; };
  line("jetfan " + s.version + " " + s.state + " consumer \"" + s.durable + "\" of stream \"" + s.stream + "\", up " +
       format::duration(s.uptime_seconds) + " (" + s.config_file + ")");
  for (const auto& problem : status_problems(s)) line("PROBLEM: " + problem);
  if (s.state == "serving") {
    line(std::string("ready:   ") +
         (s.ready ? "yes" : "no: not consuming as the only reader (the problems above); jetfan status exits 1"));
  }
  if (!s.pin_group.empty()) {
    line("pin:     " + s.pin_role + " in priority group \"" + s.pin_group + "\" (pinned " +
         std::to_string(s.pin_gained) + " time(s), lost it " + std::to_string(s.pin_lost) + ", " +
         std::to_string(s.pin_keepalives) + " keep-alive pull(s), " + std::to_string(s.pin_claims) + " claim pull(s))");
  }
  if (s.server) {
    const auto& v = *s.server;
    line("server:  " + std::to_string(v.num_pending) + " pending, " + std::to_string(v.num_ack_pending) +
         " ack pending, " + std::to_string(v.num_redelivered) + " redelivered, ack floor " +
         std::to_string(v.ack_floor_stream_seq) + ", delivered " + std::to_string(v.delivered_stream_seq) +
         "; AckPolicy " + v.ack_policy + ", AckWait " + format::duration(v.ack_wait_seconds) + ", MaxDeliver " +
         max_deliver(v.max_deliver));
  } else {
    line("server:  " + (s.server_error.empty() ? std::string("not asked") : s.server_error) + "; AckPolicy " +
         s.ack_policy + ", AckWait " + format::duration(s.ack_wait_seconds) + ", MaxDeliver " +
         max_deliver(s.max_deliver) + " (as bound)");
  }
  line("held:    " + std::to_string(s.held) + " of " + std::to_string(s.max_held) + " message(s), " +
       format::bytes(s.held_bytes) + (s.max_held_bytes ? " of " + format::bytes(s.max_held_bytes) : std::string()) +
       (s.oldest_held_seconds ? ", the oldest for " + format::duration(*s.oldest_held_seconds) : std::string()) + "; " +
       std::to_string(s.in_flight) + " in flight; " + std::to_string(s.pulls_outstanding) +
       " pull request(s) outstanding; " + std::to_string(s.reconnects) + " reconnect(s)");
  const auto& t = s.totals;
  line("totals:  " + std::to_string(t.arrived) + " arrived (" + std::to_string(t.redelivered) + " redelivered), " +
       std::to_string(t.acked) + " acked, " + std::to_string(t.nakked) + " nak'd, " + std::to_string(t.terminated) +
       " terminated, " + std::to_string(t.no_recipient) + " with no recipient, " + std::to_string(t.unroutable) +
       " unroutable");
  if (!s.recent_unmatched_keys.empty()) line("no recipient, recent keys: " + joined(s.recent_unmatched_keys, ", "));
  if (!s.unroutable_subjects.empty()) {
    std::string subjects;
    for (const auto& u : s.unroutable_subjects) {
      subjects += (subjects.empty() ? "" : ", ") + u.subject + " (" + std::to_string(u.count) + ")";
    }
    line("unroutable subjects (no key prefix): " + subjects);
  }
  for (const auto& u : s.unreadable) {
    line("unreadable subject: stream seq " + std::to_string(u.stream_seq) + " \"" + u.subject +
         "\" broke the NATS connection" + (u.times > 1 ? " (found " + std::to_string(u.times) + " times)" : "") + "; " +
         u.outcome + "; " + std::to_string(u.handed_back) + " delivery(ies) it took handed back");
  }
  if (s.tracing) {
    const auto& tr = *s.tracing;
    const std::uint64_t dropped = tr.dropped_queue_full + tr.dropped_export_failed;
    line("tracing: to " + tr.endpoint + ", new traces at a ratio of " + format::number(tr.sample_ratio) + "; " +
         std::to_string(tr.traced_messages) + " message(s) traced, " + std::to_string(tr.spans) + " span(s), " +
         std::to_string(tr.exported) + " exported, " + std::to_string(dropped) + " dropped (" +
         std::to_string(tr.dropped_queue_full) + " queue full, " + std::to_string(tr.dropped_export_failed) +
         " export failed); " + std::to_string(tr.failed_requests) + " of " + std::to_string(tr.export_requests) +
         " export(s) failed" + (tr.last_error.empty() ? "" : ", the last: " + tr.last_error));
  }
  if (s.ledger) {
    const auto& l = *s.ledger;
    line("ledger:  bucket " + l.bucket + ", interval " + format::duration(l.interval_seconds) + "; " +
         std::to_string(l.puts) + " written, " + std::to_string(l.deletes) + " deleted, " + std::to_string(l.failed) +
         " failed, " + std::to_string(l.dropped) + " dropped, " + std::to_string(l.loaded) + " loaded; " +
         std::to_string(l.tracked) + " tracked, " + std::to_string(l.waiting) + " waiting");
    if (!l.not_written.empty()) {
      line("ledger:  NOT WRITTEN: " + l.not_written + "; a restart now costs duplicates, never messages");
    }
  }
  for (const auto& h : s.handlers) {
    line("");
    line("handler " + h.name + ": patterns " + joined(h.patterns, " ") + "; max_inflight " +
         std::to_string(h.max_inflight) + (h.max_rate > 0 ? ", max_rate " + rate_text(h.max_rate) : "") +
         ", ack_timeout " + format::duration(h.ack_timeout_seconds));
    if (h.instances.empty()) line("  instances: none");
    for (const auto& i : h.instances) {
      line("  instance: connection " + std::to_string(i.connection) + ", pid " + std::to_string(i.pid) + ", uid " +
           std::to_string(i.uid) + ", connected " + format::utc(i.connected_unix_ms) + " (" +
           format::duration(i.connected_seconds) + " ago)");
    }
    line("  now:     " + std::to_string(h.in_flight) + " in flight, " + std::to_string(h.queued) + " queued; backlog " +
         std::to_string(h.backlog) +
         (h.oldest_unconfirmed_seconds ? ", the oldest for " + format::duration(*h.oldest_unconfirmed_seconds)
                                       : std::string()) +
         (h.rate_waiting ? "; held back by max_rate" : ""));
    if (h.adaptive_inflight) {
      std::string cuts;
      for (const auto cause : kCutCauses) {
        cuts += (cuts.empty() ? "" : ", ") + std::to_string(cuts_of(h, cause)) + " " + cut_name(cause);
      }
      line("  limit:   adaptive, " + std::to_string(h.inflight_limit) + " in flight at most now over its instances (" +
           std::to_string(h.min_inflight) + " to " + std::to_string(h.max_inflight) + " each); cuts: " + cuts +
           (h.last_cut ? ", the last (" + *h.last_cut + ") " + format::duration(h.last_cut_seconds.value_or(0)) + " ago"
                       : std::string()));
    }
    if (!h.order_by.empty()) {
      line("  order:   by " + h.order_by + "; " + std::to_string(h.order_blocked_keys) + " key(s) blocked, " +
           std::to_string(h.order_waiting) + " message(s) waiting behind them, the oldest for " +
           (h.order_oldest_wait_seconds ? format::duration(*h.order_oldest_wait_seconds) : std::string("-")) + "; " +
           std::to_string(h.without_order_key) + " delivered unordered for want of an order key");
    }
    const auto& c = h.stats;
    const auto& r = h.rates;
    line("  counts:  " + count_and_rate("delivered", c.delivered, r.delivered) + ", " +
         count_and_rate("ACK", c.acked, r.acked) + ", " + count_and_rate("NAK", c.failed_nak, r.failed_nak) + ", " +
         count_and_rate("TERM", c.termed, r.termed) + ", " +
         count_and_rate("timeout", c.failed_timeout, r.failed_timeout) + ", " +
         count_and_rate("disconnect", c.failed_disconnect, r.failed_disconnect));
    line("  latency: delivery to confirmation p50 " + quantile(c.confirmation_latency, 0.5) + ", p99 " +
         quantile(c.confirmation_latency, 0.99) + " (" + std::to_string(c.confirmation_latency.count()) +
         " confirmed)");
    if (h.paused)
      line("  PAUSED: gets nothing new; its messages are held for it (jetfan resume --handler " + h.name + ")");
    if (h.max_attempts > 0 || !h.dead_letter_subject.empty()) {
      line("  retry:   max_attempts " +
           (h.max_attempts > 0 ? std::to_string(h.max_attempts) : std::string("unlimited")) + ", dead letters to " +
           (h.dead_letter_subject.empty() ? std::string("none (TERM)") : h.dead_letter_subject) + "; dead-lettered " +
           std::to_string(c.dead_lettered_used_up) + " used up, " + std::to_string(c.dead_lettered_term) +
           " TERM; given up without dead letter " + std::to_string(c.gave_up) + "; publish failures " +
           std::to_string(c.dead_letter_failures));
    }
    if (h.redrive_running + h.redrive_confirmed + h.redrive_again + h.redrive_kept + h.redrive_refused > 0) {
      line(std::string("  redrive: ") + (h.redrive_running > 0 ? "RUNNING; " : "") +
           std::to_string(h.redrive_confirmed) + " confirmed and deleted, " + std::to_string(h.redrive_again) +
           " failed again (dead-lettered anew), " + std::to_string(h.redrive_kept) + " kept" +
           (h.redrive_refused > 0 ? ", " + std::to_string(h.redrive_refused) + " not redrivable" : ""));
    }
    const PublishStats& p = h.publishes;
    if (!h.publish_subjects.empty() || p.refused > 0) {
      std::string subjects;
      for (const auto& subject : h.publish_subjects) subjects += (subjects.empty() ? "" : ", ") + subject;
      line("  publish: to " + (subjects.empty() ? std::string("nowhere (no publish.subjects)") : subjects) + "; " +
           std::to_string(p.stored) + " stored, " + std::to_string(p.duplicates) + " duplicate, " +
           std::to_string(p.refused) + " refused, " + std::to_string(p.failed) + " failed, " +
           std::to_string(p.timed_out) + " timed out; " + std::to_string(p.in_flight) +
           " waiting for the server; to the server's answer p50 " + quantile(p.latency, 0.5) + ", p99 " +
           quantile(p.latency, 0.99));
    }
  }
  line("");
  line("publish to arrival: p50 " + quantile(s.publish_age, 0.5) + ", p99 " + quantile(s.publish_age, 0.99));
  std::string tails;
  for (const auto& tail : s.tails) {
    tails += (tails.empty() ? "" : ", ") + (tail.pattern.empty() ? std::string("#") : tail.pattern) + " (" +
             std::to_string(tail.dropped) + " dropped)";
  }
  line("observers: " + std::to_string(s.tails.size()) + " tail(s)" + (tails.empty() ? "" : ": " + tails) +
       "; reloads " + std::to_string(s.reloads_applied) + " applied, " + std::to_string(s.reloads_refused) +
       " refused");
  return out;
}

std::string render_status_json(const StatusSnapshot& s) {
  json doc;
  doc["schema"] = kStatusSchema;
  doc["version"] = s.version;
  doc["state"] = s.state;
  doc["ready"] = s.ready;
  doc["now_unix_ms"] = s.now_unix_ms;
  doc["uptime_seconds"] = s.uptime_seconds;
  doc["config_file"] = s.config_file;
  doc["problems"] = status_problems(s);
  json consumer = {{"stream", s.stream},
                   {"durable", s.durable},
                   {"ack_policy", s.ack_policy},
                   {"ack_wait_seconds", s.ack_wait_seconds},
                   {"max_deliver", s.max_deliver},
                   {"server", nullptr},
                   {"server_error", s.server_error.empty() ? json(nullptr) : json(s.server_error)}};
  if (s.server) {
    const auto& v = *s.server;
    consumer["server"] = {{"num_pending", v.num_pending},
                          {"num_ack_pending", v.num_ack_pending},
                          {"num_redelivered", v.num_redelivered},
                          {"num_waiting", v.num_waiting},
                          {"delivered_stream_seq", v.delivered_stream_seq},
                          {"ack_floor_stream_seq", v.ack_floor_stream_seq},
                          {"ack_policy", v.ack_policy},
                          {"ack_wait_seconds", v.ack_wait_seconds},
                          {"max_deliver", v.max_deliver},
                          {"max_ack_pending", v.max_ack_pending}};
  }
  doc["consumer"] = consumer;
  const auto& t = s.totals;
  json unroutable = json::array();
  for (const auto& u : s.unroutable_subjects) unroutable.push_back({{"subject", u.subject}, {"count", u.count}});
  doc["messages"] = {{"held", s.held},
                     {"held_bytes", s.held_bytes},
                     {"max_held", s.max_held},
                     {"max_held_bytes", s.max_held_bytes},
                     {"handed_back_for_room", t.handed_back_for_room},
                     {"in_flight", s.in_flight},
                     {"oldest_held_seconds", optional_seconds(s.oldest_held_seconds)},
                     {"arrived", t.arrived},
                     {"redelivered", t.redelivered},
                     {"acked", t.acked},
                     {"nakked", t.nakked},
                     {"terminated", t.terminated},
                     {"no_recipient", t.no_recipient},
                     {"unroutable", t.unroutable},
                     {"already_held", t.already_held},
                     {"already_settled", t.already_settled},
                     {"deliveries", t.deliveries},
                     {"unknown_confirmations", t.unknown_confirmations},
                     {"skipped_confirmed", t.skipped_confirmed},
                     {"recent_unmatched_keys", s.recent_unmatched_keys},
                     {"unroutable_subjects", unroutable}};
  json unreadable = json::array();
  for (const auto& u : s.unreadable) {
    unreadable.push_back({{"stream_seq", u.stream_seq},
                          {"subject", u.subject},
                          {"found_unix_ms", u.found_unix_ms},
                          {"handed_back", u.handed_back},
                          {"times", u.times},
                          {"outcome", u.outcome}});
  }
  doc["messages"]["unreadable_subject"] = unreadable;
  doc["messages"]["unreadable_subject_total"] = s.unreadable_total;
  if (s.tracing) {
    const auto& tr = *s.tracing;
    doc["tracing"] = {{"endpoint", tr.endpoint},
                      {"sample_ratio", tr.sample_ratio},
                      {"traced_messages", tr.traced_messages},
                      {"spans", tr.spans},
                      {"exported", tr.exported},
                      {"dropped_queue_full", tr.dropped_queue_full},
                      {"dropped_export_failed", tr.dropped_export_failed},
                      {"export_requests", tr.export_requests},
                      {"failed_requests", tr.failed_requests},
                      {"open_messages", tr.open_messages},
                      {"open_deliveries", tr.open_deliveries},
                      {"last_error", tr.last_error.empty() ? json(nullptr) : json(tr.last_error)}};
  } else {
    doc["tracing"] = nullptr;
  }
  if (s.ledger) {
    const auto& l = *s.ledger;
    doc["ledger"] = {
        {"bucket", l.bucket},   {"interval_seconds", l.interval_seconds},
        {"puts", l.puts},       {"deletes", l.deletes},
        {"failed", l.failed},   {"dropped", l.dropped},
        {"loaded", l.loaded},   {"tracked", l.tracked},
        {"waiting", l.waiting}, {"not_written", l.not_written.empty() ? json(nullptr) : json(l.not_written)}};
  } else {
    doc["ledger"] = nullptr;
  }
  doc["pulls"] = {{"outstanding", s.pulls_outstanding}, {"batch", s.pull_batch}, {"reconnects", s.reconnects}};
  doc["nats"] = {{"connected", s.nats_connected},
                 {"disconnected_seconds", optional_seconds(s.nats_disconnected_seconds)},
                 {"last_disconnect", s.nats_last_disconnect.empty() ? json(nullptr) : json(s.nats_last_disconnect)},
                 {"other_reader", s.other_reader}};
  doc["pin"] = s.pin_group.empty() ? json(nullptr) : json{{"group", s.pin_group},           {"role", s.pin_role},
                                                          {"gained", s.pin_gained},         {"lost", s.pin_lost},
                                                          {"keepalives", s.pin_keepalives}, {"claims", s.pin_claims}};
  json handlers = json::array();
  for (const auto& h : s.handlers) {
    json instances = json::array();
    for (const auto& i : h.instances) {
      instances.push_back({{"connection", i.connection},
                           {"pid", i.pid},
                           {"uid", i.uid},
                           {"connected_unix_ms", i.connected_unix_ms},
                           {"connected_seconds", i.connected_seconds}});
    }
    const auto& c = h.stats;
    const auto& r = h.rates;
    handlers.push_back(
        {{"name", h.name},
         {"patterns", h.patterns},
         {"max_inflight", h.max_inflight},
         {"ack_timeout_seconds", h.ack_timeout_seconds},
         {"instances", instances},
         {"in_flight", h.in_flight},
         {"queued", h.queued},
         {"backlog", h.backlog},
         {"max_rate", h.max_rate > 0 ? json(h.max_rate) : json(nullptr)},
         {"rate_waiting", h.rate_waiting},
         {"inflight_limit", h.inflight_limit},
         {"adaptive_inflight", h.adaptive_inflight ? json{{"min_inflight", h.min_inflight},
                                                          {"cuts", cuts_json(h)},
                                                          {"last_cut", h.last_cut ? json(*h.last_cut) : json(nullptr)},
                                                          {"last_cut_seconds", optional_seconds(h.last_cut_seconds)}}
                                                   : json(nullptr)},
         {"oldest_unconfirmed_seconds", optional_seconds(h.oldest_unconfirmed_seconds)},
         {"order", h.order_by.empty()
                       ? nlohmann::json(nullptr)
                       : nlohmann::json{{"by", h.order_by},
                                        {"blocked_keys", h.order_blocked_keys},
                                        {"waiting", h.order_waiting},
                                        {"oldest_wait_seconds", optional_seconds(h.order_oldest_wait_seconds)},
                                        {"without_order_key", h.without_order_key}}},
         {"counts",
          {{"delivered", c.delivered},
           {"acked", c.acked},
           {"termed", c.termed},
           {"failed_nak", c.failed_nak},
           {"failed_timeout", c.failed_timeout},
           {"failed_disconnect", c.failed_disconnect}}},
         {"rates_per_second",
          {{"delivered", r.delivered},
           {"acked", r.acked},
           {"termed", r.termed},
           {"failed_nak", r.failed_nak},
           {"failed_timeout", r.failed_timeout},
           {"failed_disconnect", r.failed_disconnect}}},
         {"confirmation_latency",
          {{"count", c.confirmation_latency.count()}, {"sum_seconds", c.confirmation_latency.sum_seconds()}}},
         {"paused", h.paused},
         {"retry",
          {{"max_attempts", h.max_attempts},
           {"dead_letter_subject", h.dead_letter_subject},
           {"attempts", attempts_json(c.attempts)},
           {"dead_letters", {{"used_up", c.dead_lettered_used_up}, {"term", c.dead_lettered_term}}},
           {"gave_up", c.gave_up},
           {"dead_letter_publish_failures", c.dead_letter_failures}}},
         {"redrive",
          {{"running", h.redrive_running > 0},
           {"confirmed", h.redrive_confirmed},
           {"again", h.redrive_again},
           {"kept", h.redrive_kept},
           {"refused", h.redrive_refused}}},
         {"publish",
          {{"subjects", h.publish_subjects},
           {"stored", h.publishes.stored},
           {"duplicates", h.publishes.duplicates},
           {"refused", h.publishes.refused},
           {"failed", h.publishes.failed},
           {"timed_out", h.publishes.timed_out},
           {"in_flight", h.publishes.in_flight},
           {"latency",
            {{"count", h.publishes.latency.count()}, {"sum_seconds", h.publishes.latency.sum_seconds()}}}}}});
  }
  doc["handlers"] = handlers;
  json tails = json::array();
  for (const auto& tail : s.tails) tails.push_back({{"pattern", tail.pattern}, {"dropped", tail.dropped}});
  doc["tails"] = tails;
  doc["reloads"] = {{"applied", s.reloads_applied}, {"refused", s.reloads_refused}};
  // Keys and subjects are bytes from the wire: invalid UTF-8 is replaced, never thrown about.
  return doc.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace jetfan
