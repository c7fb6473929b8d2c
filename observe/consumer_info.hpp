#pragma once
// Reads the server's answer to $JS.API.CONSUMER.INFO.<stream>.<durable> (JSON). Pure.

#include <string>
#include <string_view>
#include <variant>

#include "consumer_facts.hpp"
#include "status_snapshot.hpp"

namespace jetfan {

// The view, or why there is none: the server's own error ("consumer not found (404)"), or what
// was wrong with the answer.
std::variant<ServerConsumerView, std::string> parse_consumer_info(std::string_view json_text);

// Fills what cnats does not read of the same answer into `facts`: priority_policy,
// priority_groups, paused and pause_until. Leaves them as they are, and returns why, when the
// answer is not a consumer info; members of an unexpected type are ignored.
std::string read_newer_consumer_features(std::string_view json_text, ConsumerFacts& facts);

}  // namespace jetfan
