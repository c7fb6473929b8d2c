#pragma once
// jetfan.yaml: what the daemon is told to do. Every problem found is reported, not only the first,
// as "FILE:LINE: KEY: what is wrong". Parsing (load_config_text) is pure: it reads no file and asks
// the system nothing, so user and group names stay names (AccountName). load_config_file reads the
// file, parses it, and resolves those names on this machine (resolve_accounts, accounts.hpp).

#include <sys/types.h>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ack_policy.hpp"
#include "defaults.hpp"
#include "duration.hpp"
#include "order_by.hpp"

namespace jetfan {

// A user or group as the config names it (socket.owner, allow.users, ...), until resolve_accounts
// looks it up. `where` is the "FILE:LINE: KEY" an error about it starts with.
struct AccountName {
  std::string name;
  std::string where;
  bool operator==(const AccountName&) const = default;
};

struct TlsSettings {
  std::string ca;    // empty: system trust store
  std::string cert;  // client certificate, with key
  std::string key;
};

struct NatsSettings {
  std::vector<std::string> servers;
  std::string name;  // connection name shown by the server; default "jetfan-<durable>"
  // At most one way to authenticate.
  std::string creds;      // file with JWT and NKey seed
  std::string nkey_seed;  // file with an NKey seed
  std::string nkey;       // the public key of that seed (cnats signs with the seed, names the key)
  std::string token;
  std::string user, password;
  // Files holding the token or nats.user's password instead of this file (the first line; a
  // leading "${CREDENTIALS_DIRECTORY}" is that variable, as systemd's LoadCredential= sets it).
  // Read when jetfan connects, never kept in Config: token and password stay empty with them.
  std::string token_file, password_file;
  std::optional<TlsSettings> tls;
  Duration connect_timeout = defaults::kConnectTimeout;
  Duration reconnect_wait = defaults::kReconnectWait;  // between reconnect attempts once connected
  Duration retry_max = defaults::kRetryMax;            // cap of the backoff while unreachable at start
};

// What jetfan does when another client reads its durable (OtherReaderCheck): say so loudly (an
// error in the log, a status problem, /ready failing, a metric) and go on consuming its share, or
// also stop (exit 78).
enum class OtherReaderAction { kWarn, kExit };

struct ConsumerSettings {
  std::string stream;
  std::string durable;
  std::optional<AckPolicy> ack_policy;                     // used only when consumer info cannot be read
  std::optional<std::int64_t> max_held;                    // default: the consumer's MaxAckPending
  std::uint64_t max_held_bytes = defaults::kMaxHeldBytes;  // 0: no bound in bytes
  std::optional<int> batch;  // messages asked for by one pull request; default: max_held / 4, at most 4096
  Duration pull_expires = defaults::kPullExpires;      // how long one pull request waits at the server
  Duration idle_heartbeat = defaults::kIdleHeartbeat;  // the server's heartbeat while a pull waits
  OtherReaderAction on_other_reader = OtherReaderAction::kWarn;
};

struct KeySettings {
  std::string strip_prefix;
};

struct SocketSettings {
  std::string path;  // absolute
  mode_t mode = defaults::kSocketMode;
  std::optional<uid_t> owner;  // default: jetfan's own; resolve_accounts sets it from owner_name
  std::optional<gid_t> group;
  std::optional<AccountName> owner_name, group_name;  // as written, until resolve_accounts
  Duration hello_timeout = defaults::kHelloTimeout;
  std::size_t max_connections = defaults::kMaxConnections;
  std::size_t max_unidentified = defaults::kMaxUnidentified;
  std::uint64_t max_output_buffer = defaults::kMaxOutputBuffer;
  Duration idle_timeout = defaults::kIdleTimeout;
  Duration ping_timeout = defaults::kPingTimeout;
};

// Who may be a handler. users: and groups: stay names until resolve_accounts puts their ids ahead
// of those given as uids: and gids:.
struct AllowSettings {
  std::vector<uid_t> uids;  // users: (once resolved) and uids:
  std::vector<gid_t> gids;  // groups: (once resolved) and gids:
  std::vector<AccountName> users, groups;
  bool empty() const { return uids.empty() && gids.empty() && users.empty() && groups.empty(); }
};

// What a handler's backlog does when the consumer is full (jetfan holds max_held messages and pulls
// no more): stay (nothing is redelivered; everyone waits for it), or go back to the server, the
// oldest first (an ordered handler's newest first, which keeps its order), down to its share, so
// the other handlers keep getting new messages.
enum class WhenFull { kHold, kHandBack };
// "hold" or "hand_back", as the config file spells it.
const char* to_string(WhenFull when_full);

// The control socket (`jetfan status`, `tail`, `reload`): not the handler socket, so no handler can
// reach a control command unless the file mode lets its user.
struct ControlSettings {
  std::string path;  // default: socket.path with ".sock" replaced by ".ctl"
  mode_t mode = defaults::kControlSocketMode;
  AllowSettings allow;       // may send every command (core/control_access.hpp); empty: as the mode decides
  AllowSettings allow_read;  // may send only the commands that change nothing
};

// The HTTP endpoint for Prometheus (/metrics) and probes (/ready, /live). Off unless configured.
struct MetricsSettings {
  std::string host = defaults::kMetricsHost;  // an IP address
  std::uint16_t port = 0;                     // 0: any free port (the log says which)
  std::size_t max_connections = defaults::kMetricsMaxConnections;
};

// Spans of each message's course through jetfan and of each handler delivery (observe/
// DeliveryTracer), exported as OTLP/HTTP JSON (daemon/SpanExporter). Off unless configured; every
// key but sample_ratio needs a restart.
struct TracingSettings {
  std::string endpoint;  // http://host[:port][/path]; required; no path: /v1/traces
  // The share of messages without a valid traceparent traced, each as a new trace; one with a
  // traceparent is traced iff it is sampled. OpenTelemetry's default sampler traces them all.
  double sample_ratio = 1.0;
  std::string service_name = "jetfan";                          // the resource's service.name
  std::size_t max_queued = defaults::kTracingMaxQueued;         // spans waiting to be sent; more are dropped
  std::size_t max_batch = defaults::kTracingMaxBatch;           // spans per POST; <= max_queued
  Duration interval = defaults::kTracingInterval;               // the longest a span waits; 100ms..1h
  Duration request_timeout = defaults::kTracingRequestTimeout;  // one POST, all of it; 100ms..60s
};

// The confirmation ledger (issue 39; core/ConfirmationLedger, jetstream/ledger_record.hpp): a
// JetStream key-value bucket where jetfan records which handlers confirmed a message it still
// holds, so that after a restart it does not deliver that message to them again. Off unless
// configured; every key, and turning it on or off, needs a restart. Named apart from
// core's LedgerSettings, which is what the ledger itself is given.
struct LedgerConfig {
  std::string bucket;  // required: letters, digits, '_' and '-' (stream KV_<bucket>); made by the controller
  Duration interval = defaults::kLedgerInterval;  // a record only for a message partly confirmed this long; 100ms..1h
  std::size_t max_records = defaults::kLedgerMaxRecords;     // messages tracked (and records loaded); 1..10000000
  std::size_t max_in_flight = defaults::kLedgerMaxInFlight;  // writes waiting for the server; 1..4096
};

// handlers[].order_by (core/order_by.hpp): "key", "token:N", "header:NAME", or "none", as the
// config file spells it.
std::string to_string(const OrderBy& order_by);
// Parses the config's spelling; nullopt when it is none of the forms above.
std::optional<OrderBy> parse_order_by(const std::string& text);
// How often one handler may fail one message, and how long it waits between tries. Without a
// retry block a handler retries for ever with delivery.nak_delay doubling up to nak_delay_max.
struct RetrySettings {
  std::uint32_t max_attempts = 0;       // deliveries that may end in NAK, ack_timeout or disconnect; 0: no limit
  std::optional<Duration> backoff;      // the wait after its first failure (delivery.nak_delay), doubling ...
  std::optional<Duration> backoff_max;  // ... with each one up to this (delivery.nak_delay_max)
};

// What a handler may publish through jetfan (protocol version 3's PUB), and how much of it may wait
// for the server per connection.
struct PublishSettings {
  std::vector<std::string> subjects;  // NATS subject patterns (config/nats_subject.hpp); at least one
  std::size_t max_in_flight = defaults::kPublishMaxInFlight;
  std::uint64_t max_bytes = defaults::kPublishMaxBytes;
  Duration timeout = defaults::kPublishTimeout;
};

struct HandlerSettings {
  std::string name;
  std::vector<std::string> patterns;
  int max_inflight = defaults::kMaxInflight;  // sent to the handler as READY's max-unconfirmed
  Duration ack_timeout = defaults::kAckTimeout;
  AllowSettings allow;              // empty: any peer that can open the socket
  std::uint32_t max_instances = 0;  // 0: no limit
  double max_rate = 0;              // deliveries a second at most (core/TokenBucket); 0: no limit
  bool adaptive_inflight = false;   // each instance's in-flight limit adapts (core/AdaptiveLimit) ...
  int min_inflight = 1;             // ... between this and max_inflight
  WhenFull when_full = WhenFull::kHold;
  OrderBy order_by;                        // absent: unordered
  std::optional<RetrySettings> retry;      // none: for ever, with delivery.nak_delay and nak_delay_max
  std::string dead_letter_subject;         // empty: no dead letters; a used-up budget is a TERM for it
  bool paused = false;                     // gets nothing new; its messages are held for it
  std::optional<PublishSettings> publish;  // none: it may not publish
};

struct DeliverySettings {
  Duration nak_delay = defaults::kNakDelay;          // delay of the first redelivery after a failure
  Duration nak_delay_max = defaults::kNakDelayMax;   // the delay doubles with each delivery up to this
  std::size_t remember = defaults::kRemember;        // messages whose confirmations are remembered
  Duration drain_timeout = defaults::kDrainTimeout;  // on SIGTERM, how long deliveries in flight may finish
};

enum class LogFormat { kText, kJson };

struct Config {
  std::string file;  // where it was loaded from
  NatsSettings nats;
  ConsumerSettings consumer;
  KeySettings key;
  SocketSettings socket;
  ControlSettings control;
  std::optional<MetricsSettings> metrics;
  std::optional<TracingSettings> tracing;
  std::optional<LedgerConfig> ledger;
  std::vector<HandlerSettings> handlers;
  DeliverySettings delivery;
  std::string log_level = "info";
  LogFormat log_format = LogFormat::kText;
};

struct ConfigResult {
  std::optional<Config> config;     // set only when errors is empty
  std::vector<std::string> errors;  // one line each, "FILE:LINE: KEY: message"
};

// Reads the file, parses it and resolves its user and group names on this machine: the config
// jetfan runs with.
ConfigResult load_config_file(const std::string& path);
// Parses text as if it had been read from `name`; pure. Names stay unresolved (resolve_accounts).
ConfigResult load_config_text(const std::string& text, const std::string& name);

}  // namespace jetfan
