#include "priority_group.hpp"

#include "server_version.hpp"

namespace jetfan {

PriorityGroupPlan plan_priority_group(const Config& config, const ConsumerFacts& facts) {
  PriorityGroupPlan plan;
  const bool has_policy = !facts.priority_policy.empty() && facts.priority_policy != "none";
  if (facts.priority_groups.empty() && !has_policy) return plan;
  const std::string named = "consumer \"" + config.consumer.durable + "\" of stream \"" + config.consumer.stream + "\"";
  std::string groups;
  for (const auto& group : facts.priority_groups) groups += (groups.empty() ? "\"" : ", \"") + group + "\"";
  const std::string described = named + " has priority groups (policy " +
                                (facts.priority_policy.empty() ? std::string("unset") : facts.priority_policy) +
                                ", groups " + (groups.empty() ? std::string("none") : groups) + ")";
  if (facts.priority_policy != "pinned_client") {
    plan.refused = described +
                   ": under that policy a second client reads while the first is behind, so the durable would have "
                   "two readers, which jetfan exists to prevent. Use priority_policy pinned_client with one group "
                   "(a second jetfan then stands by), or none";
    return plan;
  }
  if (facts.priority_groups.size() != 1) {
    plan.refused = described + ": jetfan reads with one group, so the consumer must have exactly one";
    return plan;
  }
  if (facts.ack_policy && *facts.ack_policy != AckPolicy::kExplicit) {
    plan.refused = described + ": pinned_client needs AckPolicy explicit, and it has " + to_string(*facts.ack_policy);
    return plan;
  }
  if (facts.server_version.empty()) {
    plan.warning = named +
                   ": the server's version could not be read, so jetfan cannot tell whether its pins have the known "
                   "bugs of versions before 2.12.12 and 2.14.3; serving as a pinned_client";
  } else if (const auto version = jetstream::parse_server_version(facts.server_version)) {
    if (auto bugs = jetstream::pin_bugs(*version)) {
      plan.refused = described + ": " + *bugs;
      return plan;
    }
  }
  plan.pin = PinSettings{facts.priority_groups.front(), facts.priority_timeout};
  return plan;
}

}  // namespace jetfan
