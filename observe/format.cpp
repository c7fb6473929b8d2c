#include "format.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <iterator>

namespace jetfan::format {

std::string number(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buffer[400];  // a double in fixed form has at most 309 digits before the point
  // Fixed, not scientific: bucket bounds read "0.0001", as Prometheus clients write them.
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::fixed);
  return std::string(buffer, ec == std::errc() ? end : buffer);
}

std::string duration(double seconds) {
  char buffer[32];
  if (seconds < 0.001) {
    std::snprintf(buffer, sizeof buffer, "%.0fus", seconds * 1e6);
  } else if (seconds < 1) {
    std::snprintf(buffer, sizeof buffer, "%.0fms", seconds * 1000);
  } else if (seconds < 60) {
    std::snprintf(buffer, sizeof buffer, "%.1fs", seconds);
  } else if (seconds < 3600) {
    const auto whole = static_cast<long>(seconds);
    std::snprintf(buffer, sizeof buffer, "%ldm%02lds", whole / 60, whole % 60);
  } else {
    const auto whole = static_cast<long>(seconds);
    std::snprintf(buffer, sizeof buffer, "%ldh%02ldm", whole / 3600, whole % 3600 / 60);
  }
  return buffer;
}

std::string bytes(std::uint64_t count) {
  if (count < 1024) return std::to_string(count) + " B";
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(count) / 1024;
  std::size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f %s", value, kUnits[unit]);
  std::string text = buffer;
  if (const auto point = text.find(".0 "); point != std::string::npos) text.erase(point, 2);
  return text;
}

std::string rate(double per_second) {
  char buffer[32];
  if (per_second == 0) return "0";
  if (per_second < 10) {
    std::snprintf(buffer, sizeof buffer, "%.2f", per_second);
  } else if (per_second < 1000) {
    std::snprintf(buffer, sizeof buffer, "%.0f", per_second);
  } else {
    std::snprintf(buffer, sizeof buffer, "%.1fk", per_second / 1000);
  }
  return buffer;
}

std::string utc(std::int64_t unix_ms) {
  const std::time_t seconds = static_cast<std::time_t>(unix_ms / 1000);
  std::tm parts{};
  gmtime_r(&seconds, &parts);
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", parts.tm_year + 1900, parts.tm_mon + 1,
                parts.tm_mday, parts.tm_hour, parts.tm_min, parts.tm_sec, static_cast<int>(unix_ms % 1000));
  return buffer;
}

}  // namespace jetfan::format
