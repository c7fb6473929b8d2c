#pragma once
// The environment `jetfan exec` runs a command in: its own, plus what the command is told about
// the delivery (the JETFAN_* variables in exec_usage()). Pure.

#include <string>
#include <string_view>
#include <vector>

#include "handler_client.hpp"

namespace jetfan {

// "NAME=value" strings: `inherited` (e.g. environ; may be null) without any variable of the
// delivery's own names, then the delivery's.
std::vector<std::string> delivery_environment(const Delivery& delivery, std::string_view handler,
                                              const char* const* inherited);

// The variable a header's value goes in: "Nats-Msg-Id" -> "JETFAN_HEADER_NATS_MSG_ID".
std::string header_variable(std::string_view header_name);

}  // namespace jetfan
