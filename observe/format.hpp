#pragma once
// Small pure formatting helpers shared by the renderers.

#include <cstdint>
#include <string>
#include <string_view>

namespace jetfan::format {

// Shortest exact decimal form of a double ("0.25", "1e-06"); "+Inf", "-Inf", "NaN" as Prometheus writes them.
std::string number(double value);
// A human duration: "250us", "850ms", "12.3s", "4m05s", "2h10m".
std::string duration(double seconds);
// A rate: "0", "0.33", "12", "1.2k".
std::string rate(double per_second);
// A size in bytes: "512 B", "12.5 KiB", "64 MiB", "1.5 GiB" (at most one decimal, none when whole).
std::string bytes(std::uint64_t count);
// RFC 3339 UTC with milliseconds: "2026-11-29T21:00:00.123Z".
std::string utc(std::int64_t unix_ms);

}  // namespace jetfan::format
