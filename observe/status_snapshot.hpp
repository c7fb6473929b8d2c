#pragma once
// StatusSnapshot: everything `jetfan status`, its JSON and the Prometheus metrics show, as plain
// values taken at one moment on the io thread. The renderers (status_render.hpp,
// prometheus_text.hpp) are pure functions of it; the daemon fills it (daemon/control_plane.cpp).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dispatch_core.hpp"
#include "histogram.hpp"
#include "publish_stats.hpp"

namespace jetfan {

// The server's view of the consumer, from $JS.API.CONSUMER.INFO (jetstream/consumer_info.hpp).
struct ServerConsumerView {
  std::uint64_t num_pending = 0;
  std::uint64_t num_ack_pending = 0;
  std::uint64_t num_redelivered = 0;
  std::uint64_t num_waiting = 0;
  std::uint64_t delivered_stream_seq = 0;
  std::uint64_t ack_floor_stream_seq = 0;
  std::string ack_policy;  // "explicit", "all", "none"
  double ack_wait_seconds = 0;
  std::int64_t max_deliver = -1;  // -1: unlimited
  std::int64_t max_ack_pending = -1;
};

struct InstanceView {
  std::uint64_t connection = 0;
  std::int64_t pid = -1;
  std::uint32_t uid = 0;
  std::int64_t connected_unix_ms = 0;
  double connected_seconds = 0;  // how long ago
};

// Per second over the last minute (or since jetfan started, if that is shorter).
struct HandlerRates {
  double delivered = 0, acked = 0, termed = 0, failed_nak = 0, failed_timeout = 0, failed_disconnect = 0;
};

struct HandlerView {
  std::string name;
  std::vector<std::string> patterns;
  std::uint32_t max_inflight = 0;
  double max_rate = 0;        // deliveries a second at most; 0: no limit
  bool rate_waiting = false;  // messages for it wait for max_rate now, not for room
  // adaptive_inflight: each instance's limit moves from min_inflight up to max_inflight
  // (core/AdaptiveLimit); inflight_limit is their sum now (max_inflight per instance otherwise).
  bool adaptive_inflight = false;
  std::uint32_t min_inflight = 0;
  std::size_t inflight_limit = 0;
  std::optional<std::string> last_cut;     // "nak", "timeout" or "latency": the last cut's cause ...
  std::optional<double> last_cut_seconds;  // ... and how long ago
  double ack_timeout_seconds = 0;
  std::vector<InstanceView> instances;
  std::size_t in_flight = 0;
  std::size_t queued = 0;
  // Held messages it has not yet confirmed: queued, in flight, waiting behind their order key or for
  // a retry. Its backlog inside jetfan (what the stream holds beyond is the consumer's num_pending).
  std::size_t backlog = 0;
  std::optional<double> oldest_unconfirmed_seconds;
  // An ordered handler (order_by set; empty: unordered): what waits behind an older message of its key.
  std::string order_by;
  std::size_t order_blocked_keys = 0;  // keys with a message waiting behind an older one
  std::size_t order_waiting = 0;       // messages waiting so
  std::optional<double> order_oldest_wait_seconds;
  std::uint64_t without_order_key = 0;  // delivered unordered: no order key (header or token missing)
  bool paused = false;                  // gets nothing new (jetfan pause, or handlers[].paused)
  std::uint32_t max_attempts = 0;       // its retry budget; 0: no limit
  std::string dead_letter_subject;      // empty: none
  // Its redrives (jetfan redrive) since jetfan started: under way now (0 or 1); dead letters
  // confirmed and deleted; failed again (dead-lettered anew, the old one deleted); kept (not settled,
  // or not deleted).
  std::uint64_t redrive_running = 0, redrive_confirmed = 0, redrive_again = 0, redrive_kept = 0;
  std::uint64_t redrive_refused = 0;  // dead letters not redrivable (forged?), left in their stream
  // What its instances' sockets did since jetfan started, after HELLO: system calls that moved
  // something, and the bytes, each way.
  std::uint64_t socket_writes = 0, socket_written_bytes = 0, socket_reads = 0, socket_read_bytes = 0;
  // Where it may publish through jetfan (handlers[].publish.subjects; empty: nowhere), and what its
  // publishes came to since jetfan started.
  std::vector<std::string> publish_subjects;
  PublishStats publishes;
  HandlerStats stats;
  HandlerRates rates;
};

struct SubjectCount {
  std::string subject;
  std::uint64_t count = 0;
};

struct TailView {
  std::string pattern;  // empty: every message
  std::uint64_t dropped = 0;
};

struct StatusSnapshot {
  std::string version;
  std::string state;   // "starting" (not yet bound), "serving", "draining"
  bool ready = false;  // serving, and consuming as the only reader (not_consuming is empty)
  std::int64_t now_unix_ms = 0;
  double uptime_seconds = 0;
  double start_time_unix = 0;
  std::string config_file;
  std::string stream, durable;
  std::string ack_policy;  // as jetfan serves it
  double ack_wait_seconds = 0;
  std::int64_t max_deliver = -1;
  std::optional<ServerConsumerView> server;  // absent when not asked for, or not answered
  std::string server_error;                  // why it is absent, when it was asked for

  std::vector<HandlerView> handlers;
  CoreCounters totals;
  std::size_t held = 0;
  std::uint64_t held_bytes = 0;      // of the messages alive: held, in flight, queued for sockets
  std::size_t max_held = 0;          // consumer.max_held
  std::uint64_t max_held_bytes = 0;  // consumer.max_held_bytes; 0: no bound
  std::size_t in_flight = 0;
  std::optional<double> oldest_held_seconds;
  std::size_t pulls_outstanding = 0;
  std::size_t pull_batch = 0;  // messages one pull request asks for: consumer.batch, or its default
  std::uint64_t reconnects = 0;
  // The NATS connection: up, or lost for how long, and why it went last (the client's words).
  bool nats_connected = true;
  std::optional<double> nats_disconnected_seconds;
  std::string nats_last_disconnect;
  bool other_reader = false;  // another client reads the durable (daemon/ReaderHealth)
  // A pinned_client priority group (daemon/PinnedReader); pin_group empty: none. pin_role is
  // "active", "active (re-pinning)" or "standby"; how often jetfan was pinned and lost the pin, and
  // the keep-alive and claim pulls it sent.
  std::string pin_group, pin_role;
  std::uint64_t pin_gained = 0, pin_lost = 0, pin_keepalives = 0, pin_claims = 0;
  // Why jetfan is not consuming as the only reader (disconnected past the grace, the consumer gone,
  // another reader), one line each; empty: it is. Not empty means not ready.
  std::vector<std::string> not_consuming;
  // Set while jetfan is full and nothing has settled for a while (the stall warning's subject).
  struct Stall {
    std::string handler;  // the one holding everyone up
    double seconds = 0;   // since jetfan has been full with nothing settling
  };
  std::optional<Stall> stall;
  std::vector<std::string> recent_unmatched_keys;  // keys no handler matched, newest last
  std::vector<SubjectCount> unroutable_subjects;   // subjects without the key prefix
  // Messages whose subject the NATS client cannot read, found after their delivery broke the
  // connection and terminated (daemon/UnreadableMessages), newest last; how many were found since
  // start.
  struct Unreadable {
    std::uint64_t stream_seq = 0;
    std::string subject;  // escaped: "\r" for a CR, "\xNN" for other bytes that are not printable
    std::int64_t found_unix_ms = 0;
    std::uint64_t handed_back = 0;  // deliveries the break took with it, handed back at once
    std::uint64_t times = 1;        // found this often (again: a break before the TERM took effect)
    std::string outcome;            // what was done: "terminated", "dead-lettered for ..., terminated", ...
  };
  std::vector<Unreadable> unreadable;
  std::uint64_t unreadable_total = 0;
  // Tracing (config `tracing:`, daemon/DispatchTracing); absent when off.
  struct Tracing {
    std::string endpoint;
    double sample_ratio = 0;            // of messages without a traceparent
    std::uint64_t traced_messages = 0;  // arrivals traced
    std::uint64_t spans = 0;            // spans finished and offered to the exporter
    std::uint64_t exported = 0;         // in batches the collector took (2xx)
    std::uint64_t dropped_queue_full = 0;
    std::uint64_t dropped_export_failed = 0;  // in batches that failed, timed out, or were left at a stop
    std::uint64_t export_requests = 0, failed_requests = 0;
    std::size_t open_messages = 0, open_deliveries = 0;  // traced and not yet finished
    std::string last_error;                              // of the last failed export; "" if none
  };
  std::optional<Tracing> tracing;
  // The confirmation ledger (config `ledger:`, daemon/LedgerWriter); absent when off. Off the
  // critical path: its writes never decide an ack, so a failed one costs at most a duplicate after
  // a restart, never a message, and never makes jetfan not ready.
  struct Ledger {
    std::string bucket;
    double interval_seconds = 0;
    std::uint64_t puts = 0;     // records written
    std::uint64_t deletes = 0;  // records deleted (their message settled at the server)
    std::uint64_t failed = 0;   // writes the server did not take or did not answer (each tried again)
    std::uint64_t dropped = 0;  // confirmations not recorded: past max_records, or too many handler names
    std::uint64_t loaded = 0;   // records read at start or at a takeover
    std::size_t tracked = 0;    // messages tracked now (partly confirmed, or with a record to delete)
    std::size_t waiting = 0;    // writes waiting for the server's answer
    // Why the ledger is not being written now (the last failure, and for how long); "" when it is.
    std::string not_written;
  };
  std::optional<Ledger> ledger;
  LatencyHistogram publish_age;  // from publish (JetStream timestamp) to arrival
  std::vector<TailView> tails;
  std::uint64_t tail_dropped = 0;  // by every tail, ever
  std::uint64_t reloads_applied = 0, reloads_refused = 0;
  std::uint64_t resident_memory_bytes = 0;
  // What jetfan's allocations hold now (glibc's mallinfo2: chunks in use, mmapped ones included);
  // -1 where it cannot be told (another allocator, or a sanitizer's). Resident memory above it
  // is what the allocator keeps for reuse after a peak: this one grows only with a leak.
  std::int64_t heap_in_use_bytes = -1;
  // The process, as Prometheus's client libraries name it; -1 where it could not be read.
  std::int64_t open_fds = -1;
  std::int64_t max_fds = -1;  // the soft limit, RLIMIT_NOFILE
  double cpu_seconds = 0;     // user and system
  std::string cnats_version;  // of the library jetfan runs with
  std::string compiler;       // that built jetfan
  // The server's consumer view of the last periodic consumer info (metrics), and how old it is;
  // absent before the first answer or when the last one is too old to show.
  std::optional<ServerConsumerView> polled;
  double polled_age_seconds = 0;
};

// The problems an operator should see first, one line each: why jetfan is not consuming, a declared
// handler with no instance while messages wait for it, no handler connected at all, not (yet)
// serving, the confirmation ledger not being written. Shown only: readiness and `jetfan status`'s
// exit status follow `ready` (not_consuming), never this list.
std::vector<std::string> status_problems(const StatusSnapshot& snapshot);

}  // namespace jetfan
