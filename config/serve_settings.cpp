#include "serve_settings.hpp"

#include "priority_group.hpp"

#include <algorithm>
#include <stdexcept>

namespace jetfan {

ServeSettingsResult derive_serve_settings(const Config& config, const ConsumerFacts& facts) {
  ServeSettingsResult result;
  const std::string named = "consumer \"" + config.consumer.durable + "\" of stream \"" + config.consumer.stream + "\"";
  const AckPolicyDecision policy = decide_ack_policy(facts.ack_policy, config.consumer.ack_policy);
  if (!policy.policy) {
    result.error = "cannot read the info of " + named + " and consumer.ack_policy is not set in " + config.file +
                   "; set it to the consumer's policy (explicit, all or none)";
    return result;
  }
  PriorityGroupPlan groups = plan_priority_group(config, facts);
  if (!groups.refused.empty()) {
    result.error = std::move(groups.refused);
    return result;
  }
  ServeSettings s;
  s.pin = std::move(groups.pin);
  if (!groups.warning.empty()) s.warnings.push_back(std::move(groups.warning));
  if (facts.paused) {
    s.warnings.push_back(named + " is paused until " +
                         (facts.pause_until.empty() ? "further notice" : facts.pause_until) +
                         ": the server delivers nothing until then; jetfan binds and waits, and messages flow "
                         "once the consumer resumes");
  }
  if (policy.config_disagrees) {
    s.warnings.push_back(config.file + ": consumer.ack_policy says " + to_string(*config.consumer.ack_policy) +
                         ", but the server says " + to_string(*policy.policy) + "; using the server's");
  }
  if (*policy.policy == AckPolicy::kNone) {
    s.warnings.push_back(named +
                         " has AckPolicy none: delivery is at-most-once. The server forgets each message "
                         "once sent, so jetfan cannot redeliver one a handler failed or never got.");
  }

  s.ack_wait = facts.ack_wait.value_or(defaults::kAckWaitUnknown);
  if (!facts.ack_policy) {
    s.warnings.push_back("consumer info of " + named + " could not be read; using consumer.ack_policy " +
                         to_string(*policy.policy) + " from " + config.file + ", and an AckWait of " +
                         std::to_string(s.ack_wait.count()) + "ms (the server's default) for the keepalive");
  }
  CoreSettings& core = s.core;
  for (const auto& handler : config.handlers) {
    // A name not yet resolved would leave the allow list without that user: open to anyone.
    if (!handler.allow.users.empty() || !handler.allow.groups.empty()) {
      throw std::logic_error("handler " + handler.name + ": its allow list names users or groups not resolved yet");
    }
    HandlerLimits limits{static_cast<std::uint32_t>(handler.max_inflight), handler.ack_timeout};
    if (handler.retry) {
      limits.retry.max_attempts = handler.retry->max_attempts;
      limits.retry.backoff = handler.retry->backoff.value_or(config.delivery.nak_delay);
      limits.retry.backoff_max =
          std::max(handler.retry->backoff_max.value_or(config.delivery.nak_delay_max), limits.retry.backoff);
    }
    limits.retry.dead_letter = !handler.dead_letter_subject.empty();
    limits.paused = handler.paused;
    limits.max_rate = handler.max_rate;
    limits.adaptive_inflight = handler.adaptive_inflight;
    limits.min_inflight = static_cast<std::uint32_t>(handler.min_inflight);
    core.handlers.push_back(limits);
    if (facts.max_deliver > 0 && limits.retry.max_attempts > static_cast<std::uint64_t>(facts.max_deliver)) {
      // Each failure hands the message back, which costs a delivery: the server stops first.
      s.warnings.push_back("handler " + handler.name + ": retry.max_attempts " +
                           std::to_string(limits.retry.max_attempts) + " is more than the MaxDeliver " +
                           std::to_string(facts.max_deliver) + " of consumer " + named +
                           ": the server gives a message up after MaxDeliver deliveries, before its budget is "
                           "used up" +
                           (limits.retry.dead_letter ? " and before it is dead-lettered" : ""));
    }
    s.admission.push_back(
        AdmissionRule{handler.name, AllowList{handler.allow.uids, handler.allow.gids}, handler.max_instances});
  }
  core.ack_policy = *policy.policy;
  core.nak_delay = config.delivery.nak_delay;
  core.nak_delay_max = config.delivery.nak_delay_max;
  core.remember = config.delivery.remember;
  core.keepalive = std::max(s.ack_wait / defaults::kKeepalivesPerAckWait, defaults::kMinKeepalive);
  core.max_deliver = facts.max_deliver;

  std::size_t max_held = defaults::kMaxHeldUnlimited;
  if (config.consumer.max_held) {
    max_held = static_cast<std::size_t>(*config.consumer.max_held);
  } else if (facts.max_ack_pending > 0) {
    max_held = static_cast<std::size_t>(facts.max_ack_pending);
  }
  std::size_t batch = config.consumer.batch
                          ? static_cast<std::size_t>(*config.consumer.batch)
                          : std::clamp<std::size_t>(max_held / defaults::kBatchShareOfHeld, 1, defaults::kBatchMax);
  // A request for more than MaxAckPending would wait at the server for what it may never send.
  if (facts.max_ack_pending > 0) batch = std::min(batch, static_cast<std::size_t>(facts.max_ack_pending));
  s.pull = PullSettings{batch, max_held, config.consumer.max_held_bytes, config.consumer.pull_expires,
                        config.consumer.idle_heartbeat};
  result.settings = std::move(s);
  return result;
}

}  // namespace jetfan
