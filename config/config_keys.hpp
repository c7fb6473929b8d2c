#pragma once
// Every key a config file may have, section by section: the loader accepts these and no others,
// and a reload (reload_plan.hpp) must say of each whether it may change while jetfan runs. Adding
// a key here without classifying it fails a unit test.

#include <array>

namespace jetfan::config_keys {

inline constexpr std::array kTop = {"nats",    "consumer", "key",      "socket",   "control", "metrics",
                                    "tracing", "ledger",   "handlers", "delivery", "log"};
inline constexpr std::array kNats = {
    "servers",  "name",          "creds", "nkey_seed",       "nkey",           "token",    "token_file", "user",
    "password", "password_file", "tls",   "connect_timeout", "reconnect_wait", "retry_max"};
inline constexpr std::array kNatsTls = {"ca", "cert", "key"};
inline constexpr std::array kConsumer = {"stream", "durable",      "ack_policy",     "max_held",       "max_held_bytes",
                                         "batch",  "pull_expires", "idle_heartbeat", "on_other_reader"};
inline constexpr std::array kKey = {"strip_prefix"};
inline constexpr std::array kSocket = {"path",
                                       "mode",
                                       "owner",
                                       "group",
                                       "hello_timeout",
                                       "max_connections",
                                       "max_unidentified",
                                       "max_output_buffer",
                                       "idle_timeout",
                                       "ping_timeout"};
inline constexpr std::array kControl = {"path", "mode", "allow", "allow_read"};
inline constexpr std::array kMetrics = {"listen", "max_connections"};
inline constexpr std::array kTracing = {"endpoint",  "sample_ratio", "service_name",   "max_queued",
                                        "max_batch", "interval",     "request_timeout"};
inline constexpr std::array kLedger = {"bucket", "interval", "max_records", "max_in_flight"};
inline constexpr std::array kHandler = {"name",          "patterns", "max_inflight",      "ack_timeout",  "allow",
                                        "max_instances", "max_rate", "when_full",         "order_by",     "retry",
                                        "dead_letter",   "paused",   "adaptive_inflight", "min_inflight", "publish"};
inline constexpr std::array kRetry = {"max_attempts", "backoff", "backoff_max"};
inline constexpr std::array kDeadLetter = {"subject"};
inline constexpr std::array kPublish = {"subjects", "max_in_flight", "max_bytes", "timeout"};
inline constexpr std::array kAllow = {"users", "groups", "uids", "gids"};
inline constexpr std::array kDelivery = {"nak_delay", "nak_delay_max", "remember", "drain_timeout"};
inline constexpr std::array kLog = {"level", "format"};

}  // namespace jetfan::config_keys
