#pragma once
// ServeSettings: what jetfan serves with, derived from its config and from what the server says
// about the bound consumer. Pure: the one place where the consumer's facts turn into numbers.
//
//   - AckPolicy: the server's; the config's `consumer.ack_policy` only when info cannot be read.
//   - keepalive (+WPI of held messages): AckWait / defaults::kKeepalivesPerAckWait, at least
//     defaults::kMinKeepalive; AckWait is defaults::kAckWaitUnknown when info cannot be read.
//   - max_held: `consumer.max_held`, else the consumer's MaxAckPending (the server would not send
//     more anyway), else defaults::kMaxHeldUnlimited.
//   - priority groups (nats-server 2.11+): a pinned_client group is read as such, anything else is
//     refused (config/priority_group.hpp). A paused consumer is served (with a warning): the server
//     holds the pulls until it resumes.

#include <optional>
#include <string>
#include <vector>

#include "admission.hpp"
#include "config.hpp"
#include "consumer_facts.hpp"
#include "dispatch_core.hpp"
#include "pin_tracker.hpp"
#include "pull_ledger.hpp"

namespace jetfan {

struct ServeSettings {
  CoreSettings core;
  PullSettings pull;
  std::vector<AdmissionRule> admission;  // index = handler index
  Duration ack_wait{0};                  // the one the keepalive was derived from
  std::optional<PinSettings> pin;        // read as a pinned_client of this group (hot standby)
  std::vector<std::string> warnings;     // to log at startup, one line each
};

struct ServeSettingsResult {
  std::optional<ServeSettings> settings;
  std::string error;  // set when settings is not: why jetfan cannot serve
};

ServeSettingsResult derive_serve_settings(const Config& config, const ConsumerFacts& facts);

}  // namespace jetfan
