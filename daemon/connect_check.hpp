#pragma once
// ConnectCheck: `jetfan check --connect`. What serve checks against the server before it serves,
// done once and then left: the connection and its credentials, the stream and the durable and their
// settings (bound as serve binds them; never created or changed), the streams that capture the
// handlers' dead-letter subjects, the settings jetfan would derive from the consumer (priority
// groups among them), and whether a reader is at the consumer now. One line per finding:
// "ok", "warn" or "FAIL", each failure with what to change. The checks are serve's own
// (JetStreamAdmin, derive_serve_settings), so the two cannot drift apart.
//
// Thread: the caller's; it runs its own io_context while it waits. `config` must outlive it.

#include <chrono>
#include <cstdio>

#include "config.hpp"

namespace jetfan {

// Prints the findings to `out`. Returns 0 when nothing failed, else the exit status serve would
// have stopped with for the first failure (69 no server, 77 credentials, 78 config or consumer, 75
// JetStream not answering).
int run_connect_check(const Config& config, std::FILE* out, std::chrono::seconds connect_for);

}  // namespace jetfan
