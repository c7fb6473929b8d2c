#pragma once
// NATS subject patterns, as a handler's publish.subjects are written: tokens separated by ".", "*"
// standing for one token and ">" (the last token only) for one or more. Pure.

#include <optional>
#include <string>
#include <string_view>

namespace jetfan {

// Why `pattern` is not a subject pattern (an empty token, a wildcard inside a token, ">" before the
// end, a blank or a control byte), or nullopt when it is one.
std::optional<std::string> subject_pattern_error(std::string_view pattern);

// Whether `subject` (a subject one can publish to: proto::is_publish_subject) matches `pattern`, as
// nats-server matches a subscription.
bool subject_matches(std::string_view pattern, std::string_view subject);

}  // namespace jetfan
