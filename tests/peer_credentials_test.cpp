// Who may be which handler: the kernel's word on a peer (SO_PEERCRED, SO_PEERGROUPS) against each
// handler's allow list, and a socket whose owner and mode are right from the first instant.
//
// These make real users and a group (useradd, groupadd) and run handlers as them (setpriv), so they
// need root; without it they say so and skip.

#include <catch2/catch.hpp>

#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "mesh.hpp"
#include "test_users.hpp"

using namespace jetfan::testing;

namespace {

// The test users must reach the socket and write what they saw: a sticky, world-writable dir,
// which jetfan accepts for its socket (the sticky bit stops others replacing it).
void open_up(const Mesh& mesh) { REQUIRE(::chmod(mesh.dir().c_str(), 01777) == 0); }

}  // namespace

TEST_CASE("a peer whose uid is not on the handler's allow list is refused before it receives anything",
          "[integration][root]") {
  if (skip_unless_root()) return;
  TestUsers users;
  REQUIRE(users.made);
  Mesh mesh;
  open_up(mesh);
  std::string config = mesh.config("  - name: builder\n    patterns: [\"#\"]\n    allow: {users: [" + users.member +
                                   "]}\n  - name: audit\n    patterns: [\"audit.*\"]\n");
  config.insert(config.find("handlers:"), "  mode: \"0666\"\n");
  mesh.start_jetfan(config);
  CHECK_THAT(mesh.jetfan_log(), Catch::Contains("handler \"audit\" has no allow list"));
  mesh.publish("a.b", "for builder");  // waiting for builder: the impostor must not get it
  auto& impostor = mesh.start_handler("builder", {}, TestUsers::as(users.stranger), false);
  CHECK(impostor.wait(20s) == 1);
  // Told no more than a peer naming no declared handler.
  CHECK_THAT(mesh.handler_log("builder"),
             Catch::Contains("unknown handler \"builder\", or this process may not be it"));
  CHECK(mesh.seen("builder").empty());
  const std::string uid = std::to_string(TestUsers::uid_of(users.stranger));
  CHECK_THAT(mesh.jetfan_log(), Catch::Contains("uid " + uid + " gid ") &&
                                    Catch::Contains("is not on the allow list of handler \"builder\"") &&
                                    Catch::Contains("pid " + std::to_string(impostor.pid())));
  // The real one is served the message that waited.
  mesh.start_handler("builder", {}, TestUsers::as(users.member));
  REQUIRE(mesh.wait_seen("builder", 1, 2));
  REQUIRE(mesh.wait_settled());
}

TEST_CASE("a member of an allowed group is served, by its supplementary groups", "[integration][root]") {
  if (skip_unless_root()) return;
  TestUsers users;
  REQUIRE(users.made);
  Mesh mesh;
  open_up(mesh);
  std::string config =
      mesh.config("  - name: builder\n    patterns: [\"#\"]\n    allow: {groups: [" + users.group + "]}\n");
  config.insert(config.find("handlers:"), "  mode: \"0666\"\n");
  mesh.start_jetfan(config);
  mesh.start_handler("builder", {}, TestUsers::as(users.member));
  mesh.publish("a.b", "for the group");
  REQUIRE(mesh.wait_seen("builder", 1));
  REQUIRE(mesh.wait_settled());
  auto& outsider = mesh.start_handler("builder", {}, TestUsers::as(users.stranger), false);
  CHECK(outsider.wait(20s) == 1);
}

TEST_CASE("the socket has its configured owner, group and mode from the first instant it exists",
          "[integration][root]") {
  if (skip_unless_root()) return;
  TestUsers users;
  REQUIRE(users.made);
  Mesh mesh;
  std::string config = mesh.config("  - name: builder\n    patterns: [\"#\"]\n");
  config.insert(config.find("handlers:"),
                "  owner: " + users.member + "\n  group: " + users.group + "\n  mode: \"0640\"\n");
  const uid_t owner = TestUsers::uid_of(users.member);
  const gid_t group = TestUsers::gid_of(users.group);
  // Races jetfan's bind: every look at the path, from before it exists, must see it either absent or
  // exactly as configured.
  std::atomic<bool> stop{false};
  std::atomic<long> seen{0}, wrong{0};
  std::thread watcher([&] {
    while (!stop) {
      struct stat info {};
      if (::lstat(mesh.socket_path().c_str(), &info) != 0) continue;
      ++seen;
      if (!S_ISSOCK(info.st_mode) || (info.st_mode & 07777) != 0640 || info.st_uid != owner || info.st_gid != group) {
        ++wrong;
      }
    }
  });
  mesh.start_jetfan(config);
  REQUIRE(wait_until([&] { return seen > 1000; }));
  stop = true;
  watcher.join();
  CHECK(wrong == 0);
  // Nothing else is left beside it: the private directory it was made in is gone.
  std::size_t staging = 0;
  for (const auto& entry : std::filesystem::directory_iterator(mesh.dir())) {
    staging += entry.path().filename().string().rfind(".jf-", 0) == 0;
  }
  CHECK(staging == 0);
}
