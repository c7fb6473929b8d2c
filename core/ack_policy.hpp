#pragma once
// The consumer's AckPolicy, and which one jetfan follows. Pure.
//
//   explicit  every message is acked, nak'd or terminated on its own.
//   all       one +ACK settles every message up to its stream sequence.
//   none      the server forgets a message once it is sent: jetfan sends nothing back.
//
// The server's word wins: the policy is a property of the consumer the controller made. The
// config's `consumer.ack_policy` stands in only when the account may not read consumer info.

#include <optional>

namespace jetfan {

enum class AckPolicy { kExplicit, kAll, kNone };
const char* to_string(AckPolicy policy);

struct AckPolicyDecision {
  std::optional<AckPolicy> policy;  // nullopt: neither side says; jetfan cannot serve
  bool config_disagrees = false;    // both said, differently; the server's is used
};
AckPolicyDecision decide_ack_policy(std::optional<AckPolicy> from_server, std::optional<AckPolicy> from_config);

}  // namespace jetfan
