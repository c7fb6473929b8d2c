#pragma once
// What the kernel says of the process on the other end of a connected Unix socket: SO_PEERCRED
// (pid, uid, gid as they were at connect) and SO_PEERGROUPS (its supplementary groups; Linux 4.13
// and later). Used alike by the handler socket (admission) and the control socket (ControlAccess).

#include "admission.hpp"

namespace jetfan {

// Fields the kernel does not give stay at their defaults (pid -1, uid and gid 0, no groups).
PeerCredentials read_peer_credentials(int fd);

}  // namespace jetfan
