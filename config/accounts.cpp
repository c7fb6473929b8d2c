#include "accounts.hpp"

#include <grp.h>
#include <pwd.h>

#include <charconv>

namespace jetfan {
namespace {

// A name of digits alone, as an id; nullopt for any other name. Digits past the id type's range
// are no id (and, as a name, most likely no one's).
template <typename Id>
std::optional<Id> as_id(const std::string& name) {
  if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  Id id = 0;
  const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), id);
  if (ec != std::errc() || end != name.data() + name.size()) return std::nullopt;
  return id;
}

template <typename Id, typename Find>
std::optional<Id> resolve(const AccountName& account, const Find& find, const char* what,
                          std::vector<std::string>& errors) {
  if (const auto id = as_id<Id>(account.name)) return id;
  if (find) {
    if (const auto id = find(account.name)) return id;
  }
  errors.push_back(account.where + ": there is no " + what + " \"" + account.name + "\" on this machine");
  return std::nullopt;
}

}  // namespace

AccountLookup system_accounts() {
  return AccountLookup{
      [](const std::string& name) -> std::optional<uid_t> {
        passwd entry{};
        passwd* found = nullptr;
        std::vector<char> buffer(16384);
        if (getpwnam_r(name.c_str(), &entry, buffer.data(), buffer.size(), &found) == 0 && found) return found->pw_uid;
        return std::nullopt;
      },
      [](const std::string& name) -> std::optional<gid_t> {
        group entry{};
        group* found = nullptr;
        std::vector<char> buffer(65536);
        if (getgrnam_r(name.c_str(), &entry, buffer.data(), buffer.size(), &found) == 0 && found) return found->gr_gid;
        return std::nullopt;
      },
  };
}

void resolve_accounts(Config& config, std::vector<std::string>& errors, const AccountLookup& lookup) {
  auto& socket = config.socket;
  if (socket.owner_name) socket.owner = resolve<uid_t>(*socket.owner_name, lookup.user, "user", errors);
  if (socket.group_name) socket.group = resolve<gid_t>(*socket.group_name, lookup.group, "group", errors);
  socket.owner_name.reset();
  socket.group_name.reset();
  auto resolve_allow = [&](AllowSettings& allow) {
    std::vector<uid_t> uids;
    for (const auto& user : allow.users) {
      if (const auto id = resolve<uid_t>(user, lookup.user, "user", errors)) uids.push_back(*id);
    }
    std::vector<gid_t> gids;
    for (const auto& group : allow.groups) {
      if (const auto id = resolve<gid_t>(group, lookup.group, "group", errors)) gids.push_back(*id);
    }
    allow.uids.insert(allow.uids.begin(), uids.begin(), uids.end());
    allow.gids.insert(allow.gids.begin(), gids.begin(), gids.end());
    allow.users.clear();
    allow.groups.clear();
  };
  for (auto& handler : config.handlers) resolve_allow(handler.allow);
  resolve_allow(config.control.allow);
  resolve_allow(config.control.allow_read);
}

}  // namespace jetfan
