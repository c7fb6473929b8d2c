#pragma once
// What the core's unit tests share: the settings they run a DispatchCore with, and the effects it
// decided, taken and picked by kind. Test code only; header-only.

#include <chrono>
#include <cstdint>
#include <vector>

#include "dispatch_core.hpp"

namespace jetfan::testing {

// `handlers` handlers, each of `max_inflight` and an ack_timeout of 1 s; a nak delay of 100 ms
// doubling to 1 s; a keepalive of 500 ms; 100,000 messages remembered.
inline CoreSettings core_settings(std::size_t handlers, std::uint32_t max_inflight = 4,
                                  AckPolicy policy = AckPolicy::kExplicit) {
  CoreSettings s;
  s.handlers.assign(handlers, HandlerLimits{max_inflight, std::chrono::milliseconds(1000)});
  s.ack_policy = policy;
  s.nak_delay = std::chrono::milliseconds(100);
  s.nak_delay_max = std::chrono::milliseconds(1000);
  s.keepalive = std::chrono::milliseconds(500);
  s.remember = 100000;
  return s;
}

// Everything the core decided since the last take; its list is empty afterwards.
inline std::vector<Effect> take_effects(DispatchCore& core) {
  std::vector<Effect> all = std::move(core.effects());
  core.effects().clear();
  return all;
}

// The effects of one kind among `effects`, in order.
inline std::vector<Effect> effects_of(const std::vector<Effect>& effects, Effect::Kind kind) {
  std::vector<Effect> out;
  for (const auto& e : effects) {
    if (e.kind == kind) out.push_back(e);
  }
  return out;
}

// The deliveries (kDeliver) among the effects the core made, which are taken.
inline std::vector<Effect> deliveries_of(DispatchCore& core) {
  return effects_of(take_effects(core), Effect::Kind::kDeliver);
}

}  // namespace jetfan::testing
