#include "publish_line.hpp"

#include "protocol.hpp"

namespace jetfan {

PublishLine parse_publish_line(std::string_view line) {
  PublishLine parsed;
  const auto space = line.find(' ');
  parsed.subject = line.substr(0, space);
  if (space != std::string_view::npos) parsed.payload = line.substr(space + 1);
  if (line.empty()) {
    parsed.error = "is empty, not \"<subject> <payload>\"";
  } else if (parsed.subject.empty()) {
    parsed.error = "starts with a space, not with a subject";
  } else if (!proto::is_publish_subject(parsed.subject)) {
    parsed.error = "does not start with a subject to publish to (an empty token, a wildcard, a control byte)";
  }
  return parsed;
}

}  // namespace jetfan
