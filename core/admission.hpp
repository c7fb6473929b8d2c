#pragma once
// Admission: whether a connection's HELLO makes it an instance of a declared handler. Pure.
//
// The rules, in order:
//   - nothing is admitted while jetfan is not serving (starting, or draining to stop);
//   - the protocol version must be the one jetfan speaks;
//   - the handler must be declared;
//   - if the handler has an allow list, the peer's uid, primary gid or one of its supplementary
//     groups (as the kernel reports them for the socket) must be on it;
//   - a handler with max_instances > 0 admits no more connected instances than that.
// The refusal sent to the peer says what to fix on its side and nothing more: not the config
// file's path, not the other handlers' names. The log line says more.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace jetfan {

// Who is on the other end of a Unix socket, as the kernel says (SO_PEERCRED, SO_PEERGROUPS).
struct PeerCredentials {
  std::int64_t pid = -1;
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  std::vector<std::uint32_t> groups;  // supplementary groups, if known
};

struct AllowList {
  std::vector<std::uint32_t> uids;
  std::vector<std::uint32_t> gids;
  bool empty() const { return uids.empty() && gids.empty(); }
  bool allows(const PeerCredentials& peer) const;
};

struct AdmissionRule {
  std::string name;
  AllowList allow;                  // empty: any peer that can open the socket
  std::uint32_t max_instances = 0;  // 0: no limit
};

struct Hello {
  std::string_view handler;
  std::uint32_t version = 0;  // the highest protocol version the handler speaks
};

struct Admission {
  std::optional<std::size_t> handler;  // set when admitted: the index of the rule
  std::uint32_t version = 0;           // when admitted: the protocol version the connection speaks
  std::string refusal;                 // to the peer, when refused
  std::string detail;                  // for the log, when refused
};

// `instances[i]` is how many instances of rule i are connected now. jetfan speaks every protocol
// version from 1 to `version`; the connection speaks the highest one both sides speak, and a HELLO
// naming version 0 is refused.
Admission admit(std::span<const AdmissionRule> rules, const Hello& hello, const PeerCredentials& peer,
                std::span<const std::size_t> instances, bool serving, std::uint32_t version);

// Whether a new connection may stay, before it says anything. Connections that have not said HELLO
// have a small limit of their own: past it, the oldest of them is evicted rather than the newcomer
// refused, so a flood of silent connections can never keep a real handler (which says HELLO at
// once) out. Past the limit on all connections, the newcomer is refused.
struct ConnectionLimits {
  std::size_t max_connections = 0;   // all at once, HELLO said or not; > 0
  std::size_t max_unidentified = 0;  // not yet said HELLO; > 0
};
enum class ConnectionVerdict { kAccept, kAcceptEvictingOldestUnidentified, kRefuse };
// `connected` and `unidentified` count the connections there are now, without the newcomer.
ConnectionVerdict admit_connection(std::size_t connected, std::size_t unidentified, const ConnectionLimits& limits);

}  // namespace jetfan
