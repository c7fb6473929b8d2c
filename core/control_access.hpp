#pragma once
// ControlAccess: who may send which command on the control socket (daemon/CONTROL.md). Pure.
//
// The control socket's mode decides who can connect at all. With control.allow or
// control.allow_read set, the peer's credentials (SO_PEERCRED, as for handlers) decide further:
//   - root and jetfan's own uid may send every command;
//   - a peer on control.allow (uid, primary or supplementary group) may send every command;
//   - a peer on control.allow_read may send only the commands that change nothing: STATUS,
//     STATUS JSON, METRICS, TAIL, DLQ (listing) and UNREADABLE without a sequence;
//   - everyone else is refused, naming what they asked for and not who would be allowed.
// With neither list set, whoever can connect may send every command, as the mode alone decides.

#include <cstdint>
#include <string>
#include <string_view>

#include "admission.hpp"

namespace jetfan {

enum class ControlRight { kRead, kChange };

// What `line` (a command line, without its line end) needs. Unknown commands need kChange, so a
// peer that may only read learns nothing by guessing.
ControlRight right_needed(std::string_view line);

struct ControlAccess {
  AllowList change;  // control.allow
  AllowList read;    // control.allow_read
  bool open() const { return change.empty() && read.empty(); }
};

// Empty when `peer` may send a command needing `right`; otherwise the refusal for the peer.
// `self` is jetfan's own uid.
std::string why_refused(const ControlAccess& access, const PeerCredentials& peer, std::uint32_t self,
                        ControlRight right);

}  // namespace jetfan
