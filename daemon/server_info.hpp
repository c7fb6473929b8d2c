#pragma once
// The version of the NATS server jetfan is connected to, read from the INFO line a server sends
// first on every new connection: cnats 3.4 reads that line but does not give its version out. A
// second, short-lived TCP connection to the same server reads it and closes; nothing is sent. A
// server that speaks TLS first, or anything in the way, gives no version: "" then.
//
// Blocking, for startup only (at most `timeout`). Thread: any.

#include <string>
#include <string_view>

#include "time.hpp"

namespace jetfan {

// `url` as cnats names the connected server: nats://[user:pass@]host:port (or tls://).
std::string read_server_version(std::string_view url, Duration timeout);

}  // namespace jetfan
