#include "effective_config.hpp"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cstdio>
#include <sstream>
#include <vector>

#include "token_bucket.hpp"

namespace jetfan {
namespace {

constexpr const char* kHidden = "<hidden>";

std::string octal_mode(mode_t mode) {
  char text[16];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode));
  return text;
}

void allow_block(YAML::Emitter& out, const char* key, const AllowSettings& allow) {
  if (allow.empty()) return;
  out << YAML::Key << key << YAML::Value << YAML::BeginMap;
  auto names = [&](const char* list, const std::vector<AccountName>& accounts) {
    if (accounts.empty()) return;
    out << YAML::Key << list << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const auto& account : accounts) out << account.name;
    out << YAML::EndSeq;
  };
  auto ids = [&](const char* list, const auto& numbers) {
    if (numbers.empty()) return;
    out << YAML::Key << list << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const auto id : numbers) out << id;
    out << YAML::EndSeq;
  };
  names("users", allow.users);
  names("groups", allow.groups);
  ids("uids", allow.uids);
  ids("gids", allow.gids);
  out << YAML::EndMap;
}

void nats_block(YAML::Emitter& out, const NatsSettings& nats) {
  out << YAML::Key << "nats" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "servers" << YAML::Value << YAML::Flow << nats.servers;
  out << YAML::Key << "name" << YAML::Value << nats.name;
  auto given = [&](const char* key, const std::string& value, bool secret) {
    if (!value.empty()) out << YAML::Key << key << YAML::Value << (secret ? std::string(kHidden) : value);
  };
  given("creds", nats.creds, false);
  given("nkey_seed", nats.nkey_seed, false);
  given("nkey", nats.nkey, false);
  given("token", nats.token, true);
  given("token_file", nats.token_file, false);
  given("user", nats.user, false);
  given("password", nats.password, true);
  given("password_file", nats.password_file, false);
  if (nats.tls) {
    out << YAML::Key << "tls" << YAML::Value << YAML::BeginMap;
    given("ca", nats.tls->ca, false);
    given("cert", nats.tls->cert, false);
    given("key", nats.tls->key, false);
    out << YAML::EndMap;
  }
  out << YAML::Key << "connect_timeout" << YAML::Value << format_duration(nats.connect_timeout);
  out << YAML::Key << "reconnect_wait" << YAML::Value << format_duration(nats.reconnect_wait);
  out << YAML::Key << "retry_max" << YAML::Value << format_duration(nats.retry_max);
  out << YAML::EndMap;
}

void consumer_block(YAML::Emitter& out, const ConsumerSettings& consumer) {
  out << YAML::Key << "consumer" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "stream" << YAML::Value << consumer.stream;
  out << YAML::Key << "durable" << YAML::Value << consumer.durable;
  if (consumer.ack_policy) {
    out << YAML::Key << "ack_policy" << YAML::Value << to_string(*consumer.ack_policy);
  } else {
    out << YAML::Newline << YAML::Comment("ack_policy: the consumer's, from the server");
  }
  if (consumer.max_held) {
    out << YAML::Key << "max_held" << YAML::Value << *consumer.max_held;
  } else {
    out << YAML::Newline << YAML::Comment("max_held: the consumer's MaxAckPending (10000 if unlimited)");
  }
  out << YAML::Key << "max_held_bytes" << YAML::Value << format_byte_size(consumer.max_held_bytes);
  if (consumer.batch) {
    out << YAML::Key << "batch" << YAML::Value << *consumer.batch;
  } else {
    out << YAML::Newline << YAML::Comment("batch: max_held / 4, at most 4096");
  }
  out << YAML::Key << "pull_expires" << YAML::Value << format_duration(consumer.pull_expires);
  out << YAML::Key << "idle_heartbeat" << YAML::Value << format_duration(consumer.idle_heartbeat);
  out << YAML::Key << "on_other_reader" << YAML::Value
      << (consumer.on_other_reader == OtherReaderAction::kExit ? "exit" : "warn");
  out << YAML::EndMap;
}

void socket_block(YAML::Emitter& out, const SocketSettings& socket) {
  out << YAML::Key << "socket" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "path" << YAML::Value << socket.path;
  out << YAML::Key << "mode" << YAML::Value << YAML::DoubleQuoted << octal_mode(socket.mode);
  if (socket.owner_name) {
    out << YAML::Key << "owner" << YAML::Value << socket.owner_name->name;
  } else if (socket.owner) {
    out << YAML::Key << "owner" << YAML::Value << YAML::DoubleQuoted << std::to_string(*socket.owner);
  }
  if (socket.group_name) {
    out << YAML::Key << "group" << YAML::Value << socket.group_name->name;
  } else if (socket.group) {
    out << YAML::Key << "group" << YAML::Value << YAML::DoubleQuoted << std::to_string(*socket.group);
  }
  out << YAML::Key << "hello_timeout" << YAML::Value << format_duration(socket.hello_timeout);
  out << YAML::Key << "max_connections" << YAML::Value << socket.max_connections;
  out << YAML::Key << "max_unidentified" << YAML::Value << socket.max_unidentified;
  out << YAML::Key << "max_output_buffer" << YAML::Value << format_byte_size(socket.max_output_buffer);
  out << YAML::Key << "idle_timeout" << YAML::Value << format_duration(socket.idle_timeout);
  out << YAML::Key << "ping_timeout" << YAML::Value << format_duration(socket.ping_timeout);
  out << YAML::EndMap;
}

void tracing_block(YAML::Emitter& out, const std::optional<TracingSettings>& tracing) {
  if (!tracing) {
    out << YAML::Newline << YAML::Comment("tracing: off");
    return;
  }
  char ratio[32];
  const auto [end, ec] = std::to_chars(ratio, ratio + sizeof ratio, tracing->sample_ratio);
  out << YAML::Key << "tracing" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "endpoint" << YAML::Value << tracing->endpoint;
  out << YAML::Key << "sample_ratio" << YAML::Value << (ec == std::errc() ? std::string(ratio, end) : "?");
  out << YAML::Key << "service_name" << YAML::Value << tracing->service_name;
  out << YAML::Key << "max_queued" << YAML::Value << tracing->max_queued;
  out << YAML::Key << "max_batch" << YAML::Value << tracing->max_batch;
  out << YAML::Key << "interval" << YAML::Value << format_duration(tracing->interval);
  out << YAML::Key << "request_timeout" << YAML::Value << format_duration(tracing->request_timeout);
  out << YAML::EndMap;
}

void ledger_block(YAML::Emitter& out, const std::optional<LedgerConfig>& ledger) {
  if (!ledger) {
    out << YAML::Newline << YAML::Comment("ledger: off");
    return;
  }
  out << YAML::Key << "ledger" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "bucket" << YAML::Value << ledger->bucket;
  out << YAML::Key << "interval" << YAML::Value << format_duration(ledger->interval);
  out << YAML::Key << "max_records" << YAML::Value << ledger->max_records;
  out << YAML::Key << "max_in_flight" << YAML::Value << ledger->max_in_flight;
  out << YAML::EndMap;
}

void handler_block(YAML::Emitter& out, const HandlerSettings& handler) {
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << handler.name;
  out << YAML::Key << "patterns" << YAML::Value << YAML::Flow << handler.patterns;
  out << YAML::Key << "max_inflight" << YAML::Value << handler.max_inflight;
  out << YAML::Key << "ack_timeout" << YAML::Value << format_duration(handler.ack_timeout);
  allow_block(out, "allow", handler.allow);
  out << YAML::Key << "max_instances" << YAML::Value << handler.max_instances;
  if (handler.max_rate > 0) out << YAML::Key << "max_rate" << YAML::Value << rate_text(handler.max_rate);
  if (handler.adaptive_inflight) {
    out << YAML::Key << "adaptive_inflight" << YAML::Value << true;
    out << YAML::Key << "min_inflight" << YAML::Value << handler.min_inflight;
  }
  out << YAML::Key << "when_full" << YAML::Value << to_string(handler.when_full);
  if (handler.order_by.kind != OrderBy::Kind::kNone) {
    out << YAML::Key << "order_by" << YAML::Value << to_string(handler.order_by);
  }
  if (handler.retry) {
    out << YAML::Key << "retry" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "max_attempts" << YAML::Value << handler.retry->max_attempts;
    if (handler.retry->backoff) {
      out << YAML::Key << "backoff" << YAML::Value << format_duration(*handler.retry->backoff);
    }
    if (handler.retry->backoff_max) {
      out << YAML::Key << "backoff_max" << YAML::Value << format_duration(*handler.retry->backoff_max);
    }
    out << YAML::EndMap;
  }
  if (!handler.dead_letter_subject.empty()) {
    out << YAML::Key << "dead_letter" << YAML::Value << YAML::BeginMap << YAML::Key << "subject" << YAML::Value
        << handler.dead_letter_subject << YAML::EndMap;
  }
  out << YAML::Key << "paused" << YAML::Value << handler.paused;
  if (handler.publish) {
    out << YAML::Key << "publish" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "subjects" << YAML::Value << YAML::Flow << handler.publish->subjects;
    out << YAML::Key << "max_in_flight" << YAML::Value << handler.publish->max_in_flight;
    out << YAML::Key << "max_bytes" << YAML::Value << format_byte_size(handler.publish->max_bytes);
    out << YAML::Key << "timeout" << YAML::Value << format_duration(handler.publish->timeout);
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
}

// yaml-cpp writes a comment between keys at the start of its line: indent it as the key after it.
std::string indent_comments(const std::string& yaml) {
  std::vector<std::string> lines;
  std::istringstream in(yaml);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].starts_with("#") && i > 0) {
      std::size_t next = i + 1;
      while (next < lines.size() && lines[next].starts_with("#")) ++next;
      if (next < lines.size()) out.append(lines[next].find_first_not_of(' '), ' ');
    }
    out += lines[i] + "\n";
  }
  return out;
}

}  // namespace

std::string format_duration(Duration duration) {
  auto ms = duration.count();
  if (ms < 1000) return std::to_string(ms) + "ms";
  std::string out;
  if (const auto hours = ms / 3'600'000; hours > 0) out += std::to_string(hours) + "h";
  ms %= 3'600'000;
  if (const auto minutes = ms / 60'000; minutes > 0) out += std::to_string(minutes) + "m";
  ms %= 60'000;
  if (ms % 1000 == 0) {
    if (ms > 0) out += std::to_string(ms / 1000) + "s";
  } else {
    char fraction[8];
    std::snprintf(fraction, sizeof fraction, "%03lld", static_cast<long long>(ms % 1000));
    std::string digits = fraction;
    while (digits.back() == '0') digits.pop_back();
    out += std::to_string(ms / 1000) + "." + digits + "s";
  }
  return out;
}

std::string format_byte_size(std::uint64_t bytes) {
  static constexpr std::pair<std::uint64_t, const char*> kUnits[] = {
      {1ULL << 30, "GiB"}, {1ULL << 20, "MiB"}, {1ULL << 10, "KiB"}};
  for (const auto& [size, unit] : kUnits) {
    if (bytes >= size && bytes % size == 0) return std::to_string(bytes / size) + unit;
  }
  return std::to_string(bytes);
}

std::string effective_config_yaml(const Config& config) {
  YAML::Emitter out;
  out << YAML::Comment("the effective config of " + config.file + ": every key, defaults included");
  out << YAML::BeginMap;
  nats_block(out, config.nats);
  consumer_block(out, config.consumer);
  out << YAML::Key << "key" << YAML::Value << YAML::BeginMap << YAML::Key << "strip_prefix" << YAML::Value
      << YAML::DoubleQuoted << config.key.strip_prefix << YAML::EndMap;
  socket_block(out, config.socket);
  out << YAML::Key << "control" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "path" << YAML::Value << config.control.path;
  out << YAML::Key << "mode" << YAML::Value << YAML::DoubleQuoted << octal_mode(config.control.mode);
  allow_block(out, "allow", config.control.allow);
  allow_block(out, "allow_read", config.control.allow_read);
  out << YAML::EndMap;
  if (config.metrics) {
    const bool v6 = config.metrics->host.find(':') != std::string::npos;
    out << YAML::Key << "metrics" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "listen" << YAML::Value << YAML::DoubleQuoted
        << (v6 ? "[" + config.metrics->host + "]" : config.metrics->host) + ":" + std::to_string(config.metrics->port);
    out << YAML::Key << "max_connections" << YAML::Value << config.metrics->max_connections;
    out << YAML::EndMap;
  } else {
    out << YAML::Newline << YAML::Comment("metrics: off");
  }
  tracing_block(out, config.tracing);
  ledger_block(out, config.ledger);
  out << YAML::Key << "handlers" << YAML::Value << YAML::BeginSeq;
  for (const auto& handler : config.handlers) handler_block(out, handler);
  out << YAML::EndSeq;
  out << YAML::Key << "delivery" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "nak_delay" << YAML::Value << format_duration(config.delivery.nak_delay);
  out << YAML::Key << "nak_delay_max" << YAML::Value << format_duration(config.delivery.nak_delay_max);
  out << YAML::Key << "remember" << YAML::Value << config.delivery.remember;
  out << YAML::Key << "drain_timeout" << YAML::Value << format_duration(config.delivery.drain_timeout);
  out << YAML::EndMap;
  out << YAML::Key << "log" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "level" << YAML::Value << config.log_level;
  out << YAML::Key << "format" << YAML::Value << (config.log_format == LogFormat::kJson ? "json" : "text");
  out << YAML::EndMap;
  out << YAML::EndMap;
  std::string text = indent_comments(out.c_str());
  text.erase(0, text.find_first_not_of('\n'));
  return text;
}

}  // namespace jetfan
