#pragma once
// The NATS server's version, as its INFO line says it (`INFO {"version":"2.15.1",...}`, the first
// line a server sends on a new connection), and what jetfan makes of it for `pinned_client`
// priority groups. Pure.
//
// Known pin bugs (docs/OPERATING.md, "Failover"): nats-server 2.11 dereferences nil on a pull
// without a group to a pinned consumer and keeps a pin across a consumer leader change (#7819); the
// crash is fixed in 2.12.12 and 2.14.3, #7819 in 2.12.5 and 2.14.0. So 2.12.12 and later 2.12s,
// 2.14.3 and later, and 2.15 on are served; 2.11, older 2.12s, 2.13 and older 2.14s are refused.

#include <optional>
#include <string>
#include <string_view>

namespace jetfan::jetstream {

struct ServerVersion {
  int major = 0, minor = 0, patch = 0;
  std::string text;  // as the server wrote it, e.g. "2.14.3" or "2.15.0-beta.2"
};

// "2.15.1", "v2.15.1", "2.12.12-RC.1": the numbers before any suffix; nullopt when there are not three.
std::optional<ServerVersion> parse_server_version(std::string_view text);
// The version member of an INFO line (with or without its "INFO " and line end); nullopt when the
// line is not INFO or says no version.
std::optional<ServerVersion> version_in_info(std::string_view line);
// Why this server's pinned_client groups cannot be trusted, or nullopt when they can.
std::optional<std::string> pin_bugs(const ServerVersion& version);

}  // namespace jetfan::jetstream
