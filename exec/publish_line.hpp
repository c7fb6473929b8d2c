#pragma once
// The lines a command run by `jetfan exec` writes to its publish descriptor ($JETFAN_PUBLISH_FD),
// one publish each: "<subject> <payload>", the subject up to the first space, the payload every
// byte after it up to the line end ("<subject>" alone: an empty payload). Pure.

#include <cstddef>
#include <string>
#include <string_view>

namespace jetfan {

// The descriptor a command gets for its publishes (its stdout is its log).
inline constexpr int kPublishFd = 3;
// The longest publish line: jetfan refuses a payload over 1 MiB (too-large), and a subject has at
// most 4096 bytes.
inline constexpr std::size_t kMaxPublishLine = 1024 * 1024 + 4096 + 1;

struct PublishLine {
  std::string_view subject;  // views into the line
  std::string_view payload;
  std::string error;  // not empty: the line is not a publish, and why (for people)
};

PublishLine parse_publish_line(std::string_view line);

}  // namespace jetfan
