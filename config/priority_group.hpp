#pragma once
// What jetfan does with a consumer's priority groups (nats-server 2.11 and later). Pure.
//
//   - none: jetfan is the only reader, as always.
//   - `pinned_client` with one group, AckPolicy explicit, on a server without the known pin bugs
//     (jetstream/server_version.hpp): jetfan reads with the group, and a second jetfan on the same
//     durable is a hot standby (core/PinTracker). A server whose version jetfan could not read is
//     served, with a warning.
//   - anything else (`overflow`, `prioritized`, several groups, a buggy server): refused, with the
//     reason. overflow and prioritized let a second client read while the first is behind: two
//     readers of one durable, which is what jetfan exists to prevent.

#include <optional>
#include <string>

#include "config.hpp"
#include "consumer_facts.hpp"
#include "pin_tracker.hpp"

namespace jetfan {

struct PriorityGroupPlan {
  std::optional<PinSettings> pin;  // set: read as a pinned_client of this group
  std::string refused;             // set: why jetfan cannot read this consumer
  std::string warning;             // set: served, but the operator should know this
};

PriorityGroupPlan plan_priority_group(const Config& config, const ConsumerFacts& facts);

}  // namespace jetfan
