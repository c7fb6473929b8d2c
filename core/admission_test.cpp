#include "admission.hpp"

#include <catch2/catch.hpp>

using namespace jetfan;

namespace {

std::vector<AdmissionRule> rules() {
  std::vector<AdmissionRule> r(3);
  r[0].name = "builder";
  r[1].name = "audit";
  r[1].allow.uids = {1001};
  r[1].allow.gids = {2000};
  r[2].name = "single";
  r[2].max_instances = 1;
  return r;
}

Admission admit_as(std::string_view name, const PeerCredentials& peer = {},
                   std::vector<std::size_t> instances = {0, 0, 0}, bool serving = true, std::uint32_t version = 1) {
  const auto r = rules();
  return admit(r, Hello{name, version}, peer, instances, serving, 3);
}

}  // namespace

TEST_CASE("admission: a declared handler is admitted, by its index", "[unit]") {
  CHECK(admit_as("builder").handler == 0u);
  CHECK(admit_as("single").handler == 2u);
}

TEST_CASE("admission: an undeclared handler is refused without naming the others or the config", "[unit]") {
  const auto refused = admit_as("nobody");
  CHECK_FALSE(refused.handler);
  CHECK_THAT(refused.refusal, Catch::Contains("unknown handler \"nobody\""));
  CHECK_THAT(refused.refusal, !Catch::Contains("builder") && !Catch::Contains("audit") && !Catch::Contains(".yaml"));
}

TEST_CASE("admission: a declared name this process may not be is refused in the same words as an undeclared one",
          "[unit]") {
  // Else any peer could list the declared names by trying them; the log's detail tells them apart.
  const auto forbidden = admit_as("audit", PeerCredentials{1, 1500, 1500, {}});
  const auto unknown = admit_as("audjt", PeerCredentials{1, 1500, 1500, {}});
  REQUIRE_FALSE(forbidden.handler);
  REQUIRE_FALSE(unknown.handler);
  auto without_name = [](std::string text, const std::string& name) {
    return text.replace(text.find(name), name.size(), "NAME");
  };
  CHECK(without_name(forbidden.refusal, "audit") == without_name(unknown.refusal, "audjt"));
  CHECK(forbidden.detail != unknown.detail);
  CHECK_THAT(forbidden.detail, Catch::Contains("is not on the allow list"));
}

TEST_CASE("admission: nothing is admitted while not serving, nor in protocol version 0", "[unit]") {
  CHECK_FALSE(admit_as("builder", {}, {0, 0, 0}, false).handler);
  const auto none = admit_as("builder", {}, {0, 0, 0}, true, 0);
  CHECK_FALSE(none.handler);
  CHECK_THAT(none.refusal, Catch::Contains("protocol version 0 is not supported"));
}

TEST_CASE("admission: the connection speaks the highest protocol version both sides speak", "[unit]") {
  CHECK(admit_as("builder", {}, {0, 0, 0}, true, 1).version == 1u);
  CHECK(admit_as("builder", {}, {0, 0, 0}, true, 2).version == 2u);
  CHECK(admit_as("builder", {}, {0, 0, 0}, true, 3).version == 3u);
  CHECK(admit_as("builder", {}, {0, 0, 0}, true, 4).version == 3u);  // a newer handler gets what jetfan has
  CHECK(admit_as("builder", {}, {0, 0, 0}, true, 1000000).version == 3u);
}

TEST_CASE("admission: an allow list admits listed uids, gids and supplementary groups only", "[unit]") {
  CHECK(admit_as("audit", PeerCredentials{1, 1001, 1001, {}}).handler);
  CHECK(admit_as("audit", PeerCredentials{1, 1500, 2000, {}}).handler);
  CHECK(admit_as("audit", PeerCredentials{1, 1500, 1500, {7, 2000}}).handler);
  const auto refused = admit_as("audit", PeerCredentials{1, 1500, 1500, {7}});
  CHECK_FALSE(refused.handler);
  CHECK_THAT(refused.detail, Catch::Contains("uid 1500"));
  CHECK(admit_as("builder", PeerCredentials{1, 1500, 1500, {}}).handler);  // no list: anyone
}

TEST_CASE("admission: max_instances caps the connected instances of a handler", "[unit]") {
  CHECK(admit_as("single", {}, {0, 0, 0}).handler);
  CHECK_FALSE(admit_as("single", {}, {0, 0, 1}).handler);
  CHECK(admit_as("builder", {}, {500, 0, 1}).handler);
}

TEST_CASE("admission: silent connections evict their own oldest, past the total, newcomers are refused", "[unit]") {
  const ConnectionLimits limits{10, 3};
  CHECK(admit_connection(0, 0, limits) == ConnectionVerdict::kAccept);
  CHECK(admit_connection(5, 2, limits) == ConnectionVerdict::kAccept);
  CHECK(admit_connection(5, 3, limits) == ConnectionVerdict::kAcceptEvictingOldestUnidentified);
  CHECK(admit_connection(10, 3, limits) == ConnectionVerdict::kAcceptEvictingOldestUnidentified);  // total stays
  CHECK(admit_connection(10, 0, limits) == ConnectionVerdict::kRefuse);
  CHECK(admit_connection(12, 1, limits) == ConnectionVerdict::kRefuse);
}
