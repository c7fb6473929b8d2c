// A durable with a pinned_client priority group, read by two jetfans: the server gives its messages
// to the pinned one, and the other is a hot standby, not a second reader. When the pinned jetfan
// crashes, stops or steps down, the standby takes over, and nothing is lost. Against the real
// binary and a nats-server without the known pin bugs (2.12.12+, 2.14.3+; JETFAN_NATS_SERVER);
// on another server each test says it was skipped.

#include <catch2/catch.hpp>

#include <csignal>
#include <iostream>
#include <set>

#include <nlohmann/json.hpp>

#include "control.hpp"
#include "mesh.hpp"
#include "second_jetfan.hpp"

using namespace jetfan::testing;

namespace {

const std::string kBuilder = "  - name: builder\n    patterns: [\"a.>\"]\n";
const std::string kHeld = "hang1@builder";

bool server_pins_well() {
  const ServerVersion v = nats_server_version();
  if (v.at_least(2, 15) || (v.major == 2 && v.minor == 14 && v.patch >= 3) ||
      (v.major == 2 && v.minor == 12 && v.patch >= 12)) {
    return true;
  }
  std::cout << "skipped: nats-server " << v.major << "." << v.minor << "." << v.patch << " (" << nats_server_binary()
            << ") has no pinned_client groups, or pins with known bugs; set JETFAN_NATS_SERVER to 2.12.12+, 2.14.3+ "
               "or 2.15+ (scripts/nats_servers.sh forky fetches one)\n";
  return false;
}

// The durable as a controller makes it: one pinned_client group, a pin that times out after 3 s
// without a pull carrying it, and an AckWait of 4 s for what a lost reader held.
void create_pinned_consumer(Mesh& mesh) {
  const std::string answer = mesh.controller().request(
      "$JS.API.CONSUMER.CREATE.EVENTS.node1_builder",
      R"({"stream_name":"EVENTS","config":{"durable_name":"node1_builder","ack_policy":"explicit",)"
      R"("ack_wait":4000000000,"max_ack_pending":1000,"priority_policy":"pinned_client",)"
      R"("priority_groups":["jobs"],"priority_timeout":3000000000}})");
  INFO(answer);
  REQUIRE(answer.find("\"error\"") == std::string::npos);
}

nlohmann::json status_of(const std::string& control) {
  return nlohmann::json::parse(control_request(control, "STATUS JSON"));
}

std::string role_of(const std::string& control) {
  const auto doc = status_of(control);
  return doc["pin"].is_object() ? doc["pin"]["role"].get<std::string>() : "none";
}

// Two jetfans on the durable, each with a builder; "first" and "second" are what each one's saw.
struct Pair {
  explicit Pair(Mesh& mesh, const std::string& handlers = kBuilder, const std::string& extra = "")
      : config(mesh.config(handlers, extra)) {
    create_pinned_consumer(mesh);
    mesh.start_jetfan(config);
    mesh.start_handler("builder");  // seen as builder-1
    second.emplace(mesh, config);
    REQUIRE(second->wait_serving());
    second->start_handler("builder", "second");
  }
  std::string config;
  std::optional<SecondJetfan> second;
};

// Which of the pair is pinned, once the first messages were delivered: by the one that saw them.
struct Roles {
  std::string active, standby;            // control sockets
  std::string active_seen, standby_seen;  // their builders' names in Mesh::seen
};
Roles roles(Mesh& mesh, const Pair& pair) {
  const bool first_active = !mesh.seen("builder").empty();
  const std::string first = mesh.control_path(), second = pair.second->control();
  return first_active ? Roles{first, second, "builder", "second"} : Roles{second, first, "second", "builder"};
}

std::set<std::string> payloads(const std::vector<Seen>& seen) {
  std::set<std::string> out;
  for (const auto& s : seen) out.insert(s.payload);
  return out;
}

void publish_numbered(Mesh& mesh, const std::string& prefix, int count) {
  for (int i = 0; i < count; ++i) mesh.publish("a.k" + std::to_string(i % 4), prefix + std::to_string(i));
}

// Every payload published, seen by one of the two builders (at least once).
bool all_seen(Mesh& mesh, const std::string& prefix, int count) {
  auto seen = payloads(mesh.seen("builder"));
  for (const auto& p : payloads(mesh.seen("second"))) seen.insert(p);
  for (int i = 0; i < count; ++i) {
    if (!seen.count(prefix + std::to_string(i))) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("two jetfans on a pinned_client durable: one is pinned and delivers, the other stands by, healthy",
          "[integration]") {
  if (!server_pins_well()) return;
  Mesh mesh({.create_consumer = false});
  Pair pair(mesh);
  publish_numbered(mesh, "m", 20);
  REQUIRE(wait_until([&] { return all_seen(mesh, "m", 20); }));
  REQUIRE(mesh.wait_settled());
  // Exactly one of them was given the messages, and says it is pinned; the other stands by.
  const bool first_active = !mesh.seen("builder").empty();
  CHECK((first_active ? mesh.seen("second") : mesh.seen("builder")).empty());
  const std::string active = first_active ? mesh.control_path() : pair.second->control();
  const std::string standby = first_active ? pair.second->control() : mesh.control_path();
  CHECK(role_of(active) == "active");
  CHECK(role_of(standby) == "standby");
  // A standby is no thief: neither names the other as a second reader, and both are ready.
  std::string output;
  CHECK(run_jetfan({"status", "--control", standby}, mesh.dir(), output) == 0);
  CHECK_THAT(output, Catch::Contains("pin:     standby in priority group \"jobs\""));
  CHECK(run_jetfan({"status", "--control", active}, mesh.dir(), output) == 0);
  CHECK_THAT(output, Catch::Contains("pin:     active in priority group \"jobs\" (pinned 1 time(s)"));
  CHECK_THAT(mesh.jetfan_log() + pair.second->text(), !Catch::Contains("another client reads consumer"));
}

TEST_CASE("the standby takes over when the pinned jetfan is killed, and gets what it left unacked", "[integration]") {
  if (!server_pins_well()) return;
  Mesh mesh({.create_consumer = false});
  Pair pair(mesh);
  publish_numbered(mesh, "a", 4);
  REQUIRE(wait_until([&] { return all_seen(mesh, "a", 4); }));
  REQUIRE(mesh.wait_settled());
  const bool first_active = !mesh.seen("builder").empty();
  // The pinned one's handler holds the next message unconfirmed (it hangs on a first delivery), then
  // its jetfan dies.
  Process& victim = first_active ? mesh.jetfan() : *pair.second->process;
  const std::string survivor = first_active ? pair.second->control() : mesh.control_path();
  const std::string survivor_seen = first_active ? "second" : "builder";
  mesh.publish("a.k0", kHeld);
  REQUIRE(wait_until([&] { return payloads(mesh.seen(first_active ? "builder" : "second")).count(kHeld) == 1; }));
  const auto killed = std::chrono::steady_clock::now();
  victim.kill_now();
  publish_numbered(mesh, "b", 8);
  REQUIRE(wait_until([&] { return role_of(survivor) == "active"; }, 20s));
  const auto took_over = std::chrono::steady_clock::now();
  REQUIRE(wait_until([&] { return all_seen(mesh, "b", 8); }, 30s));
  // The message the dead one held comes to the new owner after AckWait.
  REQUIRE(wait_until([&] { return payloads(mesh.seen(survivor_seen)).count(kHeld) == 1; }, 30s));
  std::cout << "pinned_test: the standby took over "
            << std::chrono::duration_cast<std::chrono::milliseconds>(took_over - killed).count()
            << " ms after the pinned jetfan was killed\n";
}

TEST_CASE("a pinned jetfan that is stopped loses the pin to the standby, and stands by once it runs again",
          "[integration]") {
  if (!server_pins_well()) return;
  Mesh mesh({.create_consumer = false});
  Pair pair(mesh);
  publish_numbered(mesh, "a", 4);
  REQUIRE(wait_until([&] { return all_seen(mesh, "a", 4); }));
  REQUIRE(mesh.wait_settled());
  const bool first_active = !mesh.seen("builder").empty();
  Process& stopped = first_active ? mesh.jetfan() : *pair.second->process;
  const std::string stopped_control = first_active ? mesh.control_path() : pair.second->control();
  const std::string other = first_active ? pair.second->control() : mesh.control_path();
  stopped.signal(SIGSTOP);
  publish_numbered(mesh, "b", 8);
  REQUIRE(wait_until([&] { return role_of(other) == "active"; }, 20s));
  REQUIRE(wait_until([&] { return all_seen(mesh, "b", 8); }, 30s));
  stopped.signal(SIGCONT);
  // It learns at its next pull that the pin moved (the server refuses its id), and stands by.
  publish_numbered(mesh, "c", 8);
  REQUIRE(wait_until([&] { return role_of(stopped_control) == "standby"; }, 20s));
  REQUIRE(wait_until([&] { return all_seen(mesh, "c", 8); }, 30s));
  REQUIRE(mesh.wait_settled(30s));
  CHECK(status_of(stopped_control)["pin"]["lost"] == 1);
  std::string output;
  CHECK(run_jetfan({"status", "--control", stopped_control}, mesh.dir(), output) == 0);
  CHECK(run_jetfan({"status", "--control", other}, mesh.dir(), output) == 0);
}

TEST_CASE("jetfan step-down hands the pin to the standby, and nothing is lost, and on the standby it is refused",
          "[integration]") {
  if (!server_pins_well()) return;
  Mesh mesh({.create_consumer = false});
  Pair pair(mesh);
  publish_numbered(mesh, "a", 4);
  REQUIRE(wait_until([&] { return all_seen(mesh, "a", 4); }));
  REQUIRE(mesh.wait_settled());
  const Roles r = roles(mesh, pair);
  const std::string active = r.active, standby = r.standby, standby_seen = r.standby_seen;
  std::string output;
  // On the standby it is refused: releasing another's pin would only move it.
  CHECK(run_jetfan({"step-down", "--control", standby}, mesh.dir(), output) == 1);
  CHECK_THAT(output, Catch::Contains("standing by"));
  CHECK(role_of(active) == "active");
  const auto asked = std::chrono::steady_clock::now();
  REQUIRE(run_jetfan({"step-down", "--control", active}, mesh.dir(), output) == 0);
  CHECK_THAT(output, Catch::Contains("stepped down: jetfan delivers nothing new"));
  CHECK_THAT(output, Catch::Contains("the pin of group \"jobs\" is released"));
  CHECK(role_of(active) == "standby");
  publish_numbered(mesh, "b", 8);
  REQUIRE(wait_until([&] { return role_of(standby) == "active"; }, 20s));
  const auto moved = std::chrono::steady_clock::now();
  REQUIRE(wait_until([&] { return all_seen(mesh, "b", 8); }, 30s));
  CHECK(payloads(mesh.seen(standby_seen)).count("b7") == 1);
  REQUIRE(mesh.wait_settled());
  // The one that stepped down stays a standby: the server did not pin it anew.
  CHECK(role_of(active) == "standby");
  CHECK(status_of(active)["pin"]["gained"] == 1);
  std::cout << "pinned_test: the pin moved "
            << std::chrono::duration_cast<std::chrono::milliseconds>(moved - asked).count()
            << " ms after jetfan step-down\n";
}

TEST_CASE("a message still in flight on the owner that steps down is not overtaken by its key on the new owner",
          "[integration]") {
  // docs/dispatch-rules.md R47. The owner's handler works on m1 for longer than the new owner's
  // restart hold (nak_delay_max + 2 AckWait = 9 s here; ack_timeout 60 s). Kept alive by the old
  // owner, m1 would stay away, the hold would end, and m2, of the same key, would run first on the
  // new owner. Not kept alive, m1 comes to the new owner after AckWait, and m2 follows it.
  if (!server_pins_well()) return;
  Mesh mesh({.create_consumer = false});
  Pair pair(mesh, "  - name: builder\n    patterns: [\"a.>\"]\n    order_by: key\n    ack_timeout: 60s\n",
            "delivery:\n  nak_delay: 100ms\n  nak_delay_max: 1s\n");
  publish_numbered(mesh, "a", 4);
  REQUIRE(wait_until([&] { return all_seen(mesh, "a", 4); }));
  REQUIRE(mesh.wait_settled());
  const Roles r = roles(mesh, pair);
  const std::string active = r.active, standby = r.standby, active_seen = r.active_seen, standby_seen = r.standby_seen;
  mesh.publish("a.k0", kHeld);  // the owner's handler hangs on its first delivery
  REQUIRE(wait_until([&] { return payloads(mesh.seen(active_seen)).count(kHeld) == 1; }));
  std::string output;
  REQUIRE(run_jetfan({"step-down", "--control", active}, mesh.dir(), output) == 0);
  mesh.publish("a.k0", "after");
  REQUIRE(wait_until([&] { return role_of(standby) == "active"; }, 20s));
  REQUIRE(wait_until([&] { return payloads(mesh.seen(standby_seen)).count("after") == 1; }, 30s));
  const auto seen = mesh.seen(standby_seen);
  std::vector<std::string> k0;
  for (const auto& s : seen) {
    if (s.key == "a.k0" && (s.payload == kHeld || s.payload == "after")) k0.push_back(s.payload);
  }
  // The new owner had m1 again, and before m2.
  CHECK(k0 == std::vector<std::string>{kHeld, "after"});
}
