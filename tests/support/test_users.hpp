#pragma once
// Test support: users and a group of a test's own (useradd, groupadd), for the tests that run
// handlers or jetfan commands as someone else (setpriv). Making users needs root: a test calls
// skip_unless_root() first, which says so and skips without it.

#include <catch2/catch.hpp>

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace jetfan::testing {

// Two users and a group, named after this process and removed afterwards; `member` is in `group` as
// a supplementary group, `stranger` is not.
struct TestUsers {
  TestUsers() {
    const std::string tag = std::to_string(::getpid());
    stranger = "jftest-s" + tag;
    member = "jftest-m" + tag;
    group = "jftest-g" + tag;
    made = run("groupadd " + group) == 0 && run("useradd --no-create-home --user-group " + stranger) == 0 &&
           run("useradd --no-create-home --user-group -G " + group + " " + member) == 0;
  }
  ~TestUsers() {
    run("userdel " + stranger);
    run("userdel " + member);
    run("groupdel " + group);
  }
  TestUsers(const TestUsers&) = delete;
  TestUsers& operator=(const TestUsers&) = delete;

  // setpriv runs a command as `user`, with that user's groups, as a login would give them.
  static std::vector<std::string> as(const std::string& user) {
    return {"setpriv", "--reuid=" + user, "--regid=" + user, "--init-groups", "--"};
  }
  static uid_t uid_of(const std::string& user) { return ::getpwnam(user.c_str())->pw_uid; }
  static gid_t gid_of(const std::string& name) { return ::getgrnam(name.c_str())->gr_gid; }
  static int run(const std::string& command) { return std::system((command + " > /dev/null 2>&1").c_str()); }

  std::string stranger, member, group;
  bool made = false;
};

inline bool skip_unless_root() {
  if (::geteuid() == 0) return false;
  WARN("SKIPPED: making users and running processes as them needs root");
  return true;
}

}  // namespace jetfan::testing
