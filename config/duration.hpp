#pragma once
// Durations as written in jetfan.yaml: a whole number followed by a unit, "250ms", "30s", "5m".
// Pure functions; no state.

#include <optional>
#include <string_view>

#include "time.hpp"

namespace jetfan {

// Parses "<digits><unit>" with unit one of ms, s, m, h. Returns nullopt for anything else,
// including negatives, fractions, a missing unit and values that overflow.
std::optional<Duration> parse_duration(std::string_view text);

}  // namespace jetfan
