#pragma once
// The one step of loading a config that asks the system rather than the file: the user and group
// names it gives (socket.owner, socket.group, handlers[].allow.users and .groups) become ids, as
// this machine has them now. load_config_file runs it; load_config_text leaves the names as names.

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "config.hpp"

namespace jetfan {

// Looks a user or group up by name; nullopt if there is none.
struct AccountLookup {
  std::function<std::optional<uid_t>(const std::string&)> user;
  std::function<std::optional<gid_t>(const std::string&)> group;
};

// This machine's users and groups (getpwnam_r, getgrnam_r: /etc/passwd, /etc/group, or whatever
// nsswitch.conf names).
AccountLookup system_accounts();

// Sets socket.owner and socket.group from their names, and puts the ids of each handler's
// allow.users and allow.groups, in their order, ahead of its uids and gids; the names are gone
// afterwards. A name of digits alone is that id, looked up nowhere. Appends an error
// ("FILE:LINE: KEY: there is no user \"x\" on this machine") for each name `lookup` does not know.
void resolve_accounts(Config& config, std::vector<std::string>& errors,
                      const AccountLookup& lookup = system_accounts());

}  // namespace jetfan
