#include "peer_credentials.hpp"

#include <sys/socket.h>

namespace jetfan {

PeerCredentials read_peer_credentials(int fd) {
  PeerCredentials peer;
  ucred credentials{};
  socklen_t length = sizeof credentials;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0) {
    peer.pid = credentials.pid;
    peer.uid = credentials.uid;
    peer.gid = credentials.gid;
  }
  gid_t groups[256];
  length = sizeof groups;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &length) == 0) {
    peer.groups.assign(groups, groups + length / sizeof(gid_t));
  }
  return peer;
}

}  // namespace jetfan
