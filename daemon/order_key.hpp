#pragma once
// The order key of a message for a handler with handlers[].order_by (config.hpp): the key itself,
// one of its '.'-separated tokens, or a NATS header's value. Pure; computed by the dispatcher when
// the message arrives, and fixed from then on (dispatch_core.hpp, "Ordered handlers").

#include <optional>
#include <string_view>

#include "config.hpp"

namespace jetfan {

// nullopt when the message has none: order_by is none, the key has fewer tokens, or the header is
// missing (the message then goes to the handler unordered, and the caller counts it). `key` is the
// message key (the subject less key.strip_prefix); `headers` its NATS/1.0 header block, or empty.
// Header names match case-insensitively; the first value counts, without surrounding blanks. The
// result points into `key` or `headers`.
std::optional<std::string_view> order_key(const OrderBy& order_by, std::string_view key, std::string_view headers);

}  // namespace jetfan
