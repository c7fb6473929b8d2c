#include "reload_plan.hpp"

#include <charconv>
#include <functional>

#include "token_bucket.hpp"

namespace jetfan {
namespace {

std::string list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (const auto& item : items) out += (out.size() > 1 ? ", " : "") + item;
  return out + "]";
}

std::string ms(Duration d) { return std::to_string(d.count()) + "ms"; }

std::string retry_text(const std::optional<RetrySettings>& retry) {
  if (!retry) return "none";
  return "max_attempts " + std::to_string(retry->max_attempts) + ", backoff " +
         (retry->backoff ? ms(*retry->backoff) : "nak_delay") + ", backoff_max " +
         (retry->backoff_max ? ms(*retry->backoff_max) : "nak_delay_max");
}

std::string publish_text(const std::optional<PublishSettings>& publish) {
  if (!publish) return "none";
  std::string out = "subjects [";
  for (std::size_t i = 0; i < publish->subjects.size(); ++i) out += (i ? ", " : "") + publish->subjects[i];
  return out + "], max_in_flight " + std::to_string(publish->max_in_flight) + ", max_bytes " +
         std::to_string(publish->max_bytes) + ", timeout " + ms(publish->timeout);
}

template <typename Id>
std::string ids(const std::vector<Id>& uids, const std::vector<Id>& gids) {
  std::string out = "uids [";
  for (std::size_t i = 0; i < uids.size(); ++i) out += (i ? ", " : "") + std::to_string(uids[i]);
  out += "] gids [";
  for (std::size_t i = 0; i < gids.size(); ++i) out += (i ? ", " : "") + std::to_string(gids[i]);
  return out + "]";
}

bool same_tls(const std::optional<TlsSettings>& a, const std::optional<TlsSettings>& b) {
  if (a.has_value() != b.has_value()) return false;
  return !a || (a->ca == b->ca && a->cert == b->cert && a->key == b->key);
}

bool same_metrics(const std::optional<MetricsSettings>& a, const std::optional<MetricsSettings>& b) {
  if (a.has_value() != b.has_value()) return false;
  return !a || (a->host == b->host && a->port == b->port);
}

// The required key of a section that is off unless given: on in both with the same value, or off in
// both. Turning the section on or off is a change of this key.
template <typename Section, typename Value>
std::function<bool(const Config&, const Config&)> same_required(std::optional<Section> Config::*section,
                                                                Value Section::*key) {
  return [section, key](const Config& a, const Config& b) {
    const auto& was = a.*section;
    const auto& is = b.*section;
    if (was.has_value() != is.has_value()) return false;
    return !was || (*was).*key == (*is).*key;
  };
}

// Any other key of such a section: equal, or the section off in either (its required key tells that).
template <typename Section, typename Value>
std::function<bool(const Config&, const Config&)> same_optional(std::optional<Section> Config::*section,
                                                                Value Section::*key) {
  return [section, key](const Config& a, const Config& b) {
    const auto& was = a.*section;
    const auto& is = b.*section;
    return !was || !is || (*was).*key == (*is).*key;
  };
}

std::string ratio_text(double ratio) {
  char text[32];
  const auto [end, ec] = std::to_chars(text, text + sizeof text, ratio);
  return ec == std::errc() ? std::string(text, end) : "?";
}

// Every key a reload may not change, and how to tell that it did. A key added to Config must be
// added here or to the reloadable ones in plan_reload.
struct Fixed {
  const char* key;
  std::function<bool(const Config&, const Config&)> same;
};

const std::vector<Fixed>& fixed_keys() {
  static const std::vector<Fixed> keys = {
      {"nats.servers", [](const Config& a, const Config& b) { return a.nats.servers == b.nats.servers; }},
      {"nats.name", [](const Config& a, const Config& b) { return a.nats.name == b.nats.name; }},
      {"nats.creds", [](const Config& a, const Config& b) { return a.nats.creds == b.nats.creds; }},
      {"nats.nkey_seed", [](const Config& a, const Config& b) { return a.nats.nkey_seed == b.nats.nkey_seed; }},
      {"nats.nkey", [](const Config& a, const Config& b) { return a.nats.nkey == b.nats.nkey; }},
      {"nats.token", [](const Config& a, const Config& b) { return a.nats.token == b.nats.token; }},
      {"nats.token_file", [](const Config& a, const Config& b) { return a.nats.token_file == b.nats.token_file; }},
      {"nats.user", [](const Config& a, const Config& b) { return a.nats.user == b.nats.user; }},
      {"nats.password", [](const Config& a, const Config& b) { return a.nats.password == b.nats.password; }},
      {"nats.password_file",
       [](const Config& a, const Config& b) { return a.nats.password_file == b.nats.password_file; }},
      {"nats.tls", [](const Config& a, const Config& b) { return same_tls(a.nats.tls, b.nats.tls); }},
      {"nats.connect_timeout",
       [](const Config& a, const Config& b) { return a.nats.connect_timeout == b.nats.connect_timeout; }},
      {"nats.reconnect_wait",
       [](const Config& a, const Config& b) { return a.nats.reconnect_wait == b.nats.reconnect_wait; }},
      {"nats.retry_max", [](const Config& a, const Config& b) { return a.nats.retry_max == b.nats.retry_max; }},
      {"consumer.stream", [](const Config& a, const Config& b) { return a.consumer.stream == b.consumer.stream; }},
      {"consumer.durable", [](const Config& a, const Config& b) { return a.consumer.durable == b.consumer.durable; }},
      {"consumer.ack_policy",
       [](const Config& a, const Config& b) { return a.consumer.ack_policy == b.consumer.ack_policy; }},
      {"consumer.max_held",
       [](const Config& a, const Config& b) { return a.consumer.max_held == b.consumer.max_held; }},
      {"consumer.max_held_bytes",
       [](const Config& a, const Config& b) { return a.consumer.max_held_bytes == b.consumer.max_held_bytes; }},
      {"consumer.batch", [](const Config& a, const Config& b) { return a.consumer.batch == b.consumer.batch; }},
      {"consumer.pull_expires",
       [](const Config& a, const Config& b) { return a.consumer.pull_expires == b.consumer.pull_expires; }},
      {"consumer.idle_heartbeat",
       [](const Config& a, const Config& b) { return a.consumer.idle_heartbeat == b.consumer.idle_heartbeat; }},
      {"consumer.on_other_reader",
       [](const Config& a, const Config& b) { return a.consumer.on_other_reader == b.consumer.on_other_reader; }},
      {"key.strip_prefix", [](const Config& a, const Config& b) { return a.key.strip_prefix == b.key.strip_prefix; }},
      {"socket.path", [](const Config& a, const Config& b) { return a.socket.path == b.socket.path; }},
      {"socket.mode", [](const Config& a, const Config& b) { return a.socket.mode == b.socket.mode; }},
      {"socket.owner", [](const Config& a, const Config& b) { return a.socket.owner == b.socket.owner; }},
      {"socket.group", [](const Config& a, const Config& b) { return a.socket.group == b.socket.group; }},
      {"socket.max_connections",
       [](const Config& a, const Config& b) { return a.socket.max_connections == b.socket.max_connections; }},
      {"socket.max_unidentified",
       [](const Config& a, const Config& b) { return a.socket.max_unidentified == b.socket.max_unidentified; }},
      {"socket.max_output_buffer",
       [](const Config& a, const Config& b) { return a.socket.max_output_buffer == b.socket.max_output_buffer; }},
      {"socket.idle_timeout",
       [](const Config& a, const Config& b) { return a.socket.idle_timeout == b.socket.idle_timeout; }},
      {"socket.ping_timeout",
       [](const Config& a, const Config& b) { return a.socket.ping_timeout == b.socket.ping_timeout; }},
      {"control.path", [](const Config& a, const Config& b) { return a.control.path == b.control.path; }},
      {"control.mode", [](const Config& a, const Config& b) { return a.control.mode == b.control.mode; }},
      {"control.allow",
       [](const Config& a, const Config& b) {
         return a.control.allow.uids == b.control.allow.uids && a.control.allow.gids == b.control.allow.gids;
       }},
      {"control.allow_read",
       [](const Config& a, const Config& b) {
         return a.control.allow_read.uids == b.control.allow_read.uids &&
                a.control.allow_read.gids == b.control.allow_read.gids;
       }},
      {"metrics.listen", [](const Config& a, const Config& b) { return same_metrics(a.metrics, b.metrics); }},
      {"metrics.max_connections",
       [](const Config& a, const Config& b) {
         return !a.metrics || !b.metrics || a.metrics->max_connections == b.metrics->max_connections;
       }},
      // Turning tracing on or off is a change of tracing.endpoint.
      {"tracing.endpoint", same_required(&Config::tracing, &TracingSettings::endpoint)},
      {"tracing.service_name", same_optional(&Config::tracing, &TracingSettings::service_name)},
      {"tracing.max_queued", same_optional(&Config::tracing, &TracingSettings::max_queued)},
      {"tracing.max_batch", same_optional(&Config::tracing, &TracingSettings::max_batch)},
      {"tracing.interval", same_optional(&Config::tracing, &TracingSettings::interval)},
      {"tracing.request_timeout", same_optional(&Config::tracing, &TracingSettings::request_timeout)},
      // Turning the ledger on or off is a change of ledger.bucket. The ledger is made with these
      // keys at start and loads its records from the bucket then, so none changes while jetfan runs.
      {"ledger.bucket", same_required(&Config::ledger, &LedgerConfig::bucket)},
      {"ledger.interval", same_optional(&Config::ledger, &LedgerConfig::interval)},
      {"ledger.max_records", same_optional(&Config::ledger, &LedgerConfig::max_records)},
      {"ledger.max_in_flight", same_optional(&Config::ledger, &LedgerConfig::max_in_flight)},
      {"delivery.remember",
       [](const Config& a, const Config& b) { return a.delivery.remember == b.delivery.remember; }},
      {"log.format", [](const Config& a, const Config& b) { return a.log_format == b.log_format; }},
  };
  return keys;
}

}  // namespace

std::vector<std::string> restart_keys() {
  std::vector<std::string> keys;
  for (const auto& fixed : fixed_keys()) keys.emplace_back(fixed.key);
  return keys;
}

const std::vector<std::string>& reloadable_keys() {
  static const std::vector<std::string> keys = {"handlers.name",
                                                "handlers.patterns",
                                                "handlers.max_inflight",
                                                "handlers.ack_timeout",
                                                "handlers.allow",
                                                "handlers.max_instances",
                                                "handlers.max_rate",
                                                "handlers.when_full",
                                                "handlers.order_by",
                                                "handlers.retry",
                                                "handlers.dead_letter",
                                                "handlers.paused",
                                                "handlers.adaptive_inflight",
                                                "handlers.min_inflight",
                                                "handlers.publish",
                                                "delivery.nak_delay",
                                                "delivery.nak_delay_max",
                                                "delivery.drain_timeout",
                                                "socket.hello_timeout",
                                                "tracing.sample_ratio",
                                                "log.level"};
  return keys;
}

ReloadPlan plan_reload(const Config& running, const Config& next) {
  ReloadPlan plan;
  for (const auto& fixed : fixed_keys()) {
    if (!fixed.same(running, next)) plan.refused.emplace_back(fixed.key);
  }
  if (!plan.refused.empty()) return plan;

  auto change = [&](const std::string& key, const std::string& from, const std::string& to) {
    if (from != to) plan.changes.push_back(key + ": " + from + " -> " + to);
  };
  plan.old_to_new.resize(running.handlers.size());
  std::vector<bool> matched(next.handlers.size(), false);
  for (std::size_t old = 0; old < running.handlers.size(); ++old) {
    const HandlerSettings& was = running.handlers[old];
    for (std::size_t now = 0; now < next.handlers.size(); ++now) {
      if (next.handlers[now].name != was.name) continue;
      plan.old_to_new[old] = now;
      matched[now] = true;
      const HandlerSettings& is = next.handlers[now];
      const std::string at = "handlers." + was.name;
      change(at + ".patterns", list(was.patterns), list(is.patterns));
      change(at + ".max_inflight", std::to_string(was.max_inflight), std::to_string(is.max_inflight));
      change(at + ".ack_timeout", ms(was.ack_timeout), ms(is.ack_timeout));
      change(at + ".allow", ids(was.allow.uids, was.allow.gids), ids(is.allow.uids, is.allow.gids));
      change(at + ".max_instances", std::to_string(was.max_instances), std::to_string(is.max_instances));
      change(at + ".max_rate", rate_text(was.max_rate), rate_text(is.max_rate));
      change(at + ".when_full", to_string(was.when_full), to_string(is.when_full));
      change(at + ".order_by", to_string(was.order_by), to_string(is.order_by));
      change(at + ".retry", retry_text(was.retry), retry_text(is.retry));
      change(at + ".dead_letter", was.dead_letter_subject, is.dead_letter_subject);
      change(at + ".publish", publish_text(was.publish), publish_text(is.publish));
      change(at + ".paused", was.paused ? "true" : "false", is.paused ? "true" : "false");
      change(at + ".adaptive_inflight", was.adaptive_inflight ? "true" : "false",
             is.adaptive_inflight ? "true" : "false");
      change(at + ".min_inflight", std::to_string(was.min_inflight), std::to_string(is.min_inflight));
      if (now != old) change(at + " (place in the list)", std::to_string(old + 1), std::to_string(now + 1));
    }
    if (!plan.old_to_new[old]) {
      plan.removed.push_back(was.name);
      plan.changes.push_back("handlers: removed " + was.name);
    }
  }
  for (std::size_t now = 0; now < next.handlers.size(); ++now) {
    if (matched[now]) continue;
    plan.added.push_back(next.handlers[now].name);
    plan.changes.push_back("handlers: added " + next.handlers[now].name + " " + list(next.handlers[now].patterns));
  }
  change("delivery.nak_delay", ms(running.delivery.nak_delay), ms(next.delivery.nak_delay));
  change("delivery.nak_delay_max", ms(running.delivery.nak_delay_max), ms(next.delivery.nak_delay_max));
  change("delivery.drain_timeout", ms(running.delivery.drain_timeout), ms(next.delivery.drain_timeout));
  change("socket.hello_timeout", ms(running.socket.hello_timeout), ms(next.socket.hello_timeout));
  if (running.tracing && next.tracing) {  // on in both: the fixed keys above refuse turning it on or off
    change("tracing.sample_ratio", ratio_text(running.tracing->sample_ratio), ratio_text(next.tracing->sample_ratio));
  }
  change("log.level", running.log_level, next.log_level);
  return plan;
}

}  // namespace jetfan
