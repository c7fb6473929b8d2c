#include "control_access.hpp"

#include <algorithm>
#include <cctype>

namespace jetfan {

namespace {

bool same_word(std::string_view word, std::string_view upper) {
  return word.size() == upper.size() && std::equal(word.begin(), word.end(), upper.begin(), [](char a, char b) {
           return std::toupper(static_cast<unsigned char>(a)) == b;
         });
}

}  // namespace

ControlRight right_needed(std::string_view line) {
  const auto space = line.find_first_of(" \t");
  const std::string_view verb = line.substr(0, space);
  std::string_view rest = space == std::string_view::npos ? std::string_view() : line.substr(space + 1);
  rest.remove_prefix(std::min(rest.find_first_not_of(" \t"), rest.size()));
  if (same_word(verb, "STATUS") || same_word(verb, "METRICS") || same_word(verb, "TAIL") || same_word(verb, "DLQ")) {
    return ControlRight::kRead;
  }
  // UNREADABLE SEQ handles the message it finds; the bare listing changes nothing.
  if (same_word(verb, "UNREADABLE") && rest.empty()) return ControlRight::kRead;
  return ControlRight::kChange;
}

std::string why_refused(const ControlAccess& access, const PeerCredentials& peer, std::uint32_t self,
                        ControlRight right) {
  if (access.open() || peer.uid == 0 || peer.uid == self) return {};
  if (!access.change.empty() && access.change.allows(peer)) return {};
  if (right == ControlRight::kRead && !access.read.empty() && access.read.allows(peer)) return {};
  if (right == ControlRight::kChange && !access.read.empty() && access.read.allows(peer)) {
    return "not allowed: uid " + std::to_string(peer.uid) +
           " may only read (STATUS, METRICS, TAIL, DLQ, UNREADABLE), not send commands that change jetfan";
  }
  return "not allowed: uid " + std::to_string(peer.uid) + " is not on jetfan's control allow list";
}

}  // namespace jetfan
