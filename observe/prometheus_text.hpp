#pragma once
// The Prometheus text exposition format (version 0.0.4) of a snapshot. Pure.
//
// Names follow Prometheus's conventions: a jetfan_ prefix, counters end in _total, times are in
// seconds, sizes in bytes, one unit per name; per-handler series carry a `handler` label. Every
// label value is escaped (escape_label_value). The list, with what each
// means, is in daemon/CONTROL.md and README.md ("Metrics, /ready and /live").

#include <string>
#include <string_view>

#include "status_snapshot.hpp"

namespace jetfan {

inline constexpr const char* kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

std::string render_prometheus(const StatusSnapshot& snapshot);

// A label value as the text format wants it: backslash, double quote and line feed escaped.
std::string escape_label_value(std::string_view value);

}  // namespace jetfan
