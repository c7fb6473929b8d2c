#include "admission.hpp"

#include <algorithm>

namespace jetfan {

bool AllowList::allows(const PeerCredentials& peer) const {
  if (empty()) return true;
  auto listed = [](const std::vector<std::uint32_t>& ids, std::uint32_t id) {
    return std::find(ids.begin(), ids.end(), id) != ids.end();
  };
  if (listed(uids, peer.uid) || listed(gids, peer.gid)) return true;
  return std::any_of(peer.groups.begin(), peer.groups.end(), [&](std::uint32_t g) { return listed(gids, g); });
}

Admission admit(std::span<const AdmissionRule> rules, const Hello& hello, const PeerCredentials& peer,
                std::span<const std::size_t> instances, bool serving, std::uint32_t version) {
  Admission out;
  const std::string name(hello.handler);
  if (!serving) {
    out.refusal = "jetfan is not serving (it is starting or shutting down); connect again shortly";
    out.detail = out.refusal;
    return out;
  }
  if (hello.version == 0) {
    out.refusal = "protocol version 0 is not supported; this jetfan speaks versions 1 to " + std::to_string(version);
    out.detail = out.refusal;
    return out;
  }
  const auto rule = std::find_if(rules.begin(), rules.end(), [&](const AdmissionRule& r) { return r.name == name; });
  // One refusal for a name not declared and one this process may not be, so that no peer can list
  // the declared names by trying them; the log (detail) keeps the difference.
  const std::string unknown_or_forbidden =
      "unknown handler \"" + name +
      "\", or this process may not be it: a handler must be declared in jetfan's config, and admitted by its "
      "allow list";
  if (rule == rules.end()) {
    out.refusal = unknown_or_forbidden;
    out.detail = "handler \"" + name + "\" is not declared";
    return out;
  }
  const auto index = static_cast<std::size_t>(rule - rules.begin());
  if (!rule->allow.allows(peer)) {
    out.refusal = unknown_or_forbidden;
    out.detail = "uid " + std::to_string(peer.uid) + " gid " + std::to_string(peer.gid) +
                 " is not on the allow list of handler \"" + name + "\"";
    return out;
  }
  if (rule->max_instances > 0 && index < instances.size() && instances[index] >= rule->max_instances) {
    out.refusal = "handler \"" + name + "\" already has its " + std::to_string(rule->max_instances) +
                  " instance(s) connected (max_instances)";
    out.detail = out.refusal;
    return out;
  }
  out.handler = index;
  out.version = std::min(hello.version, version);
  return out;
}

ConnectionVerdict admit_connection(std::size_t connected, std::size_t unidentified, const ConnectionLimits& limits) {
  if (unidentified >= limits.max_unidentified) return ConnectionVerdict::kAcceptEvictingOldestUnidentified;
  if (connected >= limits.max_connections) return ConnectionVerdict::kRefuse;
  return ConnectionVerdict::kAccept;
}

}  // namespace jetfan
