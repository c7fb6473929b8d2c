#pragma once
// Reads the server's answer to $JS.API.CONSUMER.INFO.<stream>.<durable> (JSON). Pure.

#include <string>
#include <string_view>
#include <variant>

#include "status_snapshot.hpp"

namespace jetfan {

// The view, or why there is none: the server's own error ("consumer not found (404)"), or what
// was wrong with the answer.
std::variant<ServerConsumerView, std::string> parse_consumer_info(std::string_view json_text);

}  // namespace jetfan
