#pragma once
// `jetfan status`, as text for a person and as JSON for a script. Pure functions of a snapshot.
//
// The JSON schema is versioned: its "schema" member is kStatusSchema, and daemon/CONTROL.md
// documents every member. A change that removes or renames a member, or changes its meaning, takes
// a new version; adding members does not.

#include <string>

#include "status_snapshot.hpp"

namespace jetfan {

inline constexpr const char* kStatusSchema = "jetfan.status/1";

// Problems first (status_problems), then the consumer, the totals, each handler, observers.
std::string render_status_text(const StatusSnapshot& snapshot);
// One JSON object and a newline.
std::string render_status_json(const StatusSnapshot& snapshot);

}  // namespace jetfan
