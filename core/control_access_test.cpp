#include <catch2/catch.hpp>

#include "control_access.hpp"

using namespace jetfan;

namespace {

constexpr std::uint32_t kJetfan = 990;

PeerCredentials peer(std::uint32_t uid, std::uint32_t gid = 5000, std::vector<std::uint32_t> groups = {}) {
  return {1234, uid, gid, std::move(groups)};
}

}  // namespace

TEST_CASE("control commands that change nothing need only the right to read") {
  for (const char* line : {"STATUS", "status json", "METRICS", "TAIL", "TAIL a.>", "DLQ builder", "DLQ b 1-4 JSON",
                           "UNREADABLE", "unreadable  "}) {
    INFO(line);
    CHECK(right_needed(line) == ControlRight::kRead);
  }
  for (const char* line : {"RELOAD", "PAUSE builder", "RESUME builder", "REDRIVE builder ALL", "STEPDOWN",
                           "UNREADABLE 42", "STATUSX", "", "FROB"}) {
    INFO(line);
    CHECK(right_needed(line) == ControlRight::kChange);
  }
}

TEST_CASE("without control allow lists, whoever may connect may send every command") {
  const ControlAccess open;
  CHECK(why_refused(open, peer(4242), kJetfan, ControlRight::kChange).empty());
}

TEST_CASE("with allow lists: root and jetfan's uid always, allow for all, allow_read for reading only") {
  ControlAccess access;
  access.change.uids = {1001};
  access.read.gids = {7000};
  CHECK(why_refused(access, peer(0), kJetfan, ControlRight::kChange).empty());
  CHECK(why_refused(access, peer(kJetfan), kJetfan, ControlRight::kChange).empty());
  CHECK(why_refused(access, peer(1001), kJetfan, ControlRight::kChange).empty());
  CHECK(why_refused(access, peer(1001), kJetfan, ControlRight::kRead).empty());

  const auto reader = peer(1002, 5000, {7000});  // by a supplementary group
  CHECK(why_refused(access, reader, kJetfan, ControlRight::kRead).empty());
  CHECK_THAT(why_refused(access, reader, kJetfan, ControlRight::kChange),
             Catch::StartsWith("not allowed: uid 1002 may only read"));

  CHECK_THAT(why_refused(access, peer(1003), kJetfan, ControlRight::kRead),
             Catch::Equals("not allowed: uid 1003 is not on jetfan's control allow list"));
  CHECK_FALSE(why_refused(access, peer(1003, 7001), kJetfan, ControlRight::kRead).empty());

  ControlAccess read_only;  // allow_read alone: changing is root's and jetfan's
  read_only.read.uids = {1002};
  CHECK(why_refused(read_only, peer(1002), kJetfan, ControlRight::kRead).empty());
  CHECK_FALSE(why_refused(read_only, peer(1002), kJetfan, ControlRight::kChange).empty());
  CHECK(why_refused(read_only, peer(kJetfan), kJetfan, ControlRight::kChange).empty());
}
