#include "ack_policy.hpp"

namespace jetfan {

const char* to_string(AckPolicy policy) {
  switch (policy) {
    case AckPolicy::kExplicit:
      return "explicit";
    case AckPolicy::kAll:
      return "all";
    case AckPolicy::kNone:
      return "none";
  }
  return "?";
}

AckPolicyDecision decide_ack_policy(std::optional<AckPolicy> from_server, std::optional<AckPolicy> from_config) {
  if (from_server) return {from_server, from_config && *from_config != *from_server};
  return {from_config, false};
}

}  // namespace jetfan
