#pragma once
// Every default jetfan runs with, in one place, with the reason for each. The Config structs take
// their initial values from here; nothing else in jetfan writes a default of its own.

#include <cstddef>
#include <cstdint>

#include "time.hpp"

namespace jetfan::defaults {

// --- nats
inline constexpr const char* kServer = "nats://127.0.0.1:4222";  // a server beside the module
inline constexpr Duration kConnectTimeout{2000};                 // a loopback or LAN server answers well within it
inline constexpr Duration kReconnectWait{250};                   // between reconnect attempts once connected
inline constexpr Duration kRetryMax{5000};   // cap of the doubling backoff while unreachable at start
inline constexpr Duration kRetryFirst{100};  // first wait of that backoff
// Publishes (acks) buffered while disconnected; acks are tiny, so this is far more than enough.
inline constexpr std::int64_t kReconnectBufferBytes = 64 * 1024 * 1024;

// --- consumer
// The pull batch when consumer.batch is not set: a quarter of max_held, so that the one to two
// batches kept requested leave room for what is held, and at most kBatchMax. Fewer, bigger requests
// cost the server less: against batch 256, 4096 read 1.3x as fast with one handler on this
// project's benchmark (docs/BENCHMARKS.md, "Pull batch").
inline constexpr int kBatchShareOfHeld = 4;
inline constexpr int kBatchMax = 4096;
inline constexpr Duration kPullExpires{5000};    // also bounds how long a hand-back at shutdown waits
inline constexpr Duration kIdleHeartbeat{1000};  // 3 missed = the request is lost, re-pull
// max_held when the consumer's MaxAckPending is unlimited (-1): enough to keep handlers busy,
// small enough to size the process (10,000 × 1 KiB held stays under 32 MiB).
inline constexpr std::size_t kMaxHeldUnlimited = 10000;
// Bytes of messages held, in flight and waiting in output buffers, all together: a sidecar an operator
// can size whatever the message size or the number of handlers. 32 MiB keeps jetfan's peak RSS under
// 64 MiB in every case of the benchmark (16 KiB to 8 handlers: 49 MiB; with 64 MiB it was 85 MiB),
// and still holds 2,048 messages of 16 KiB, enough to keep every handler busy.
inline constexpr std::uint64_t kMaxHeldBytes = 32ULL << 20;
// AckWait when consumer info cannot be read: the server's own default.
inline constexpr Duration kAckWaitUnknown{30000};
// Held messages are touched (+WPI) every AckWait / kKeepalivesPerAckWait: three chances per AckWait,
// so one late or lost touch never lets the server redeliver what jetfan still owns.
inline constexpr int kKeepalivesPerAckWait = 3;
inline constexpr Duration kMinKeepalive{50};  // a tiny AckWait must not make jetfan spin

// --- socket
inline constexpr unsigned kSocketMode = 0660;           // owner and group; handlers join the group
inline constexpr unsigned kSocketDirectoryMode = 0750;  // a directory jetfan makes for its socket
inline constexpr Duration kHelloTimeout{5000};
// Connections at once, all handlers together: far above a module's instances, far below what
// would exhaust memory or descriptors.
inline constexpr std::size_t kMaxConnections = 256;
// Connections that have not said HELLO yet, counted apart: a flood of silent connections evicts
// its own oldest, never a handler that said HELLO.
inline constexpr std::size_t kMaxUnidentified = 16;
// Bytes jetfan made for one connection and the peer has not read (MSG lines, PONGs; message bodies
// are shared and budgeted by consumer.max_held_bytes). Past it the peer is cut off.
inline constexpr std::uint64_t kMaxOutputBuffer = 1 << 20;
// A handler with nothing in flight and silent this long is sent PING; no answer within
// kPingTimeout, and it is closed as wedged.
inline constexpr Duration kIdleTimeout{60000};
inline constexpr Duration kPingTimeout{10000};
// Descriptors kept free for the NATS connection and jetfan's own needs when accepting handlers.
inline constexpr std::size_t kReservedDescriptors = 64;

// --- control socket and metrics
inline constexpr unsigned kControlSocketMode = 0600;       // jetfan's own user: control can reload the config
inline constexpr const char* kMetricsHost = "127.0.0.1";   // loopback unless an address is given
inline constexpr std::size_t kMetricsMaxConnections = 32;  // scrapers and probes at once; more get 503
inline constexpr std::size_t kControlMaxSessions = 16;     // control connections at once; more get ERR busy

// --- tracing: OpenTelemetry's batch span processor's defaults, but a shorter request timeout
inline constexpr std::size_t kTracingMaxQueued = 2048;
inline constexpr std::size_t kTracingMaxBatch = 512;
inline constexpr Duration kTracingInterval{5000};
inline constexpr Duration kTracingRequestTimeout{5000};

// --- ledger (issue 39, the confirmation ledger)
// Most messages are confirmed by every handler within a second and so never cost a write; one a
// handler is slow with, or away from, is recorded after a second, well before a restart is likely.
inline constexpr Duration kLedgerInterval{1000};
// As delivery.remember's default: by default the ledger tracks as many messages as jetfan
// remembers the confirmations of.
inline constexpr std::size_t kLedgerMaxRecords = 100000;
// As a handler's max_inflight: enough writes in flight to keep up with a server at LAN latency,
// few enough that a slow server makes the ledger wait rather than pile up requests.
inline constexpr std::size_t kLedgerMaxInFlight = 64;

// --- handlers
inline constexpr int kMaxInflight = 64;        // per connection; a handler raises it for throughput
inline constexpr Duration kAckTimeout{30000};  // the server's default AckWait, for the same reason

// --- delivery
inline constexpr Duration kNakDelay{1000};        // first redelivery after a failure
inline constexpr Duration kNakDelayMax{60000};    // the doubling stops here
inline constexpr std::size_t kRemember = 100000;  // messages whose confirmations are remembered
inline constexpr Duration kDrainTimeout{10000};   // what a stop may wait for deliveries in flight

// A handler's publishes through jetfan (handlers[].publish), per connection.
inline constexpr std::size_t kPublishMaxInFlight = 256;        // waiting for the server's answer
inline constexpr std::uint64_t kPublishMaxBytes = 8ULL << 20;  // their bodies, together
inline constexpr Duration kPublishTimeout{10000};              // for the server's answer, then PUBERR timeout

}  // namespace jetfan::defaults
