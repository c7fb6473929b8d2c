// Integration tests: pausing and resuming a handler through the control socket and the config.

#include <catch2/catch.hpp>

#include <fstream>

#include "control.hpp"
#include "mesh.hpp"

using namespace jetfan::testing;

namespace {

const char* kTwoHandlers =
    "  - name: builder\n    patterns: [\"a.*\"]\n"
    "  - name: audit\n    patterns: [\"#\"]\n";

}  // namespace

TEST_CASE("a paused handler gets nothing new and holds its messages, resume delivers them", "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config(kTwoHandlers));
  mesh.start_handler("builder");
  mesh.start_handler("audit");
  std::string output;
  REQUIRE(run_jetfan({"pause", "--handler", "builder", "--control", mesh.control_path()}, mesh.dir(), output) == 0);
  CHECK(output.find("handler \"builder\" paused") != std::string::npos);
  const auto seq = mesh.publish("a.one");
  REQUIRE(mesh.wait_seen("audit", 1));
  // Held for builder: not acked, not redelivered, builder got nothing.
  REQUIRE(wait_until([&] { return mesh.state().num_ack_pending == 1; }));
  CHECK(mesh.seen("builder").empty());
  const std::string status = control_request(mesh.control_path(), "STATUS");
  CHECK(status.find("PAUSED") != std::string::npos);
  const std::string json = control_request(mesh.control_path(), "STATUS JSON");
  CHECK(json.find("\"paused\":true") != std::string::npos);

  REQUIRE(run_jetfan({"resume", "--handler", "builder", "--control", mesh.control_path()}, mesh.dir(), output) == 0);
  REQUIRE(mesh.wait_seen("builder", 1));
  REQUIRE(mesh.wait_settled());
  CHECK(mesh.seen("builder").at(0).stream_seq == seq);
  CHECK(mesh.seen("builder").at(0).deliveries == 1);  // held, never redelivered
  CHECK(mesh.seen("audit").size() == 1);
  CHECK(run_jetfan({"pause", "--handler", "nobody", "--control", mesh.control_path()}, mesh.dir(), output) == 64);
  CHECK(output.find("no handler \"nobody\"") != std::string::npos);
}

TEST_CASE("paused: true in the config pauses a handler from the start, and a reload resumes it", "[integration]") {
  Mesh mesh;
  const std::string paused =
      "  - name: builder\n    patterns: [\"a.*\"]\n    paused: true\n"
      "  - name: audit\n    patterns: [\"#\"]\n";
  mesh.start_jetfan(mesh.config(paused));
  mesh.start_handler("builder");
  mesh.start_handler("audit");
  mesh.publish("a.two");
  REQUIRE(mesh.wait_seen("audit", 1));
  REQUIRE(wait_until([&] { return mesh.state().num_ack_pending == 1; }));
  CHECK(mesh.seen("builder").empty());
  std::ofstream(mesh.dir() + "/jetfan.yaml") << mesh.config(kTwoHandlers);
  std::string output;
  REQUIRE(run_jetfan({"reload", "--control", mesh.control_path()}, mesh.dir(), output) == 0);
  REQUIRE(mesh.wait_seen("builder", 1));
  REQUIRE(mesh.wait_settled());
}
