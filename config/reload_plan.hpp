#pragma once
// What a reload (SIGHUP, `jetfan reload`) may change, decided by comparing the running config with
// the one just read. Pure.
//
// A reload may change the handlers (add, remove, reorder, their patterns, max_inflight,
// ack_timeout, allow, max_instances and when_full), delivery.nak_delay, nak_delay_max and
// drain_timeout, socket.hello_timeout, tracing.sample_ratio and log.level. Everything else is fixed
// while jetfan runs: the connection to NATS (servers, credentials, TLS, timeouts), the consumer and
// how it is read, the key prefix, the socket (path, mode, owner, group, connection limits and
// timeouts), control socket and metrics endpoint, tracing (on or off, and every other key of it),
// the confirmation ledger (on or off, and every key of it), log.format, and delivery.remember (it
// sizes what is remembered). A new config that changes any of
// those is refused as a whole, naming every such key, and the running config stays in force.
//
// Handlers are matched by name: a handler of the same name in both keeps its instances and what
// it holds, even if its patterns or place in the list changed.

#include <optional>
#include <string>
#include <vector>

#include "config.hpp"

namespace jetfan {

struct ReloadPlan {
  // Keys that differ and need a restart, e.g. "consumer.durable". Non-empty: refuse the reload.
  std::vector<std::string> refused;
  // Per running handler (by index): its index in the new config, or nullopt when it was removed.
  std::vector<std::optional<std::size_t>> old_to_new;
  std::vector<std::string> added;    // names of handlers only the new config declares
  std::vector<std::string> removed;  // names of handlers only the running config declares
  // One line per change, for the log and the reply, e.g. "delivery.nak_delay: 1000ms -> 50ms".
  std::vector<std::string> changes;
};

ReloadPlan plan_reload(const Config& running, const Config& next);

// The keys a reload refuses to change ("nats.tls" stands for everything under it), and those it
// applies ("handlers.patterns": that key of any handler). Together they name every key of
// config_keys.hpp, once.
std::vector<std::string> restart_keys();
const std::vector<std::string>& reloadable_keys();

}  // namespace jetfan
