// `jetfan status`: what a running jetfan shows, as text and JSON, over the control socket, against
// a real nats-server, the real jetfan and real handlers.

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "control.hpp"
#include "mesh.hpp"

using namespace jetfan::testing;

namespace {

const std::string kBuilderAndAudit =
    "  - name: builder\n    patterns: [\"a.*\"]\n"
    "  - name: audit\n    patterns: [\"#\"]\n";

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

TEST_CASE("status shows first, as the problem, a declared handler with no instance while messages wait",
          "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config(kBuilderAndAudit));
  auto& builder = mesh.start_handler("builder");
  mesh.publish("a.one");
  mesh.publish("a.two");
  mesh.publish("zzz.nobody-wants-this");  // for audit only
  REQUIRE(mesh.wait_seen("builder", 2));
  REQUIRE(wait_until([&] { return mesh.state().num_ack_pending == 3; }));

  const std::string text = control_request(mesh.control_path(), "STATUS");
  INFO(text);
  const auto lines = lines_of(text);
  REQUIRE(lines.size() > 4);
  CHECK_THAT(lines[0], Catch::StartsWith("jetfan ") &&
                           Catch::Contains("serving consumer \"node1_builder\" of stream \"EVENTS\""));
  CHECK_THAT(
      lines[1],
      Catch::StartsWith(
          "PROBLEM: handler \"audit\" has no instance connected and 3 message(s) waiting for it, the oldest for "));
  CHECK(lines[2] == "ready:   yes");
  CHECK_THAT(lines[3], Catch::StartsWith("server:  0 pending, 3 ack pending, 0 redelivered, ack floor 0"));
  CHECK_THAT(text, Catch::Contains("handler builder: patterns a.*; max_inflight 64"));
  CHECK_THAT(text, Catch::Contains(", pid " + std::to_string(builder.pid()) + ", uid "));
  CHECK_THAT(text, Catch::Contains("delivered 2 ("));
  CHECK_THAT(text, Catch::Contains("ACK 2 ("));
  CHECK_THAT(text, Catch::Contains("handler audit: patterns #"));
  CHECK_THAT(text, Catch::Contains("  instances: none"));
  CHECK_THAT(text, Catch::Contains("0 in flight, 3 queued; backlog 3, the oldest for "));
  CHECK_THAT(text, Catch::Contains("0 in flight, 0 queued; backlog 0\n"));  // builder

  const auto doc = nlohmann::json::parse(control_request(mesh.control_path(), "STATUS JSON"));
  CHECK(doc["schema"] == "jetfan.status/1");
  CHECK(doc["state"] == "serving");
  CHECK(doc["ready"] == true);
  REQUIRE(doc["problems"].size() == 1);
  CHECK_THAT(doc["problems"][0].get<std::string>(), Catch::StartsWith("handler \"audit\" has no instance"));
  CHECK(doc["consumer"]["server"]["num_ack_pending"] == 3);
  CHECK(doc["consumer"]["server"]["num_pending"] == 0);
  CHECK(doc["consumer"]["server"]["ack_policy"] == "explicit");
  CHECK(doc["messages"]["held"] == 3);
  CHECK(doc["messages"]["arrived"] == 3);
  REQUIRE(doc["handlers"].size() == 2);
  CHECK(doc["handlers"][0]["name"] == "builder");
  CHECK(doc["handlers"][0]["instances"].size() == 1);
  CHECK(doc["handlers"][0]["instances"][0]["pid"] == builder.pid());
  CHECK(doc["handlers"][0]["counts"]["delivered"] == 2);
  CHECK(doc["handlers"][0]["counts"]["acked"] == 2);
  CHECK(doc["handlers"][0]["backlog"] == 0);
  CHECK(doc["handlers"][1]["backlog"] == 3);
  CHECK(doc["handlers"][0]["confirmation_latency"]["count"] == 2);
  CHECK(doc["handlers"][1]["queued"] == 3);
  CHECK(doc["handlers"][1]["instances"].empty());
  CHECK(doc["handlers"][1]["oldest_unconfirmed_seconds"].get<double>() >= 0);

  // Once audit connects, the problem is gone and everything settles.
  mesh.start_handler("audit");
  REQUIRE(mesh.wait_settled());
  const auto calm = nlohmann::json::parse(control_request(mesh.control_path(), "STATUS JSON"));
  CHECK(calm["problems"].empty());
  CHECK(calm["messages"]["held"] == 0);
  CHECK(calm["consumer"]["server"]["ack_floor_stream_seq"] == 3);
}

TEST_CASE("jetfan status reaches the control socket from --config or --control, and says plainly when it cannot",
          "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config(kBuilderAndAudit));
  std::string output;
  CHECK(run_jetfan({"status", "--config", mesh.dir() + "/jetfan.yaml"}, mesh.dir(), output) == 0);
  CHECK_THAT(output, Catch::Contains("PROBLEM: no handler is connected"));
  CHECK(run_jetfan({"status", "--json", "--control", mesh.control_path()}, mesh.dir(), output) == 0);
  CHECK(nlohmann::json::parse(output)["schema"] == "jetfan.status/1");
  CHECK(run_jetfan({"status", "--control", mesh.dir() + "/nothing.ctl"}, mesh.dir(), output) == 69);
  CHECK_THAT(output, Catch::Contains("cannot connect to the control socket"));
  CHECK_THAT(control_request(mesh.control_path(), "FROB"), Catch::StartsWith("ERR unknown command \"FROB\""));
  // The handler socket does not take control commands.
  CHECK_THAT(control_request(mesh.socket_path(), "STATUS", 3s), Catch::StartsWith("ERR"));
}

TEST_CASE("jetfan status answers but exits 75 while jetfan is not serving yet, so a health check fails",
          "[integration]") {
  Mesh mesh;
  mesh.stop_server();  // jetfan keeps trying to connect: it starts, but does not serve
  mesh.start_jetfan(mesh.config(kBuilderAndAudit), false);
  REQUIRE(mesh.wait_for_log("control socket"));
  std::string output;
  CHECK(run_jetfan({"status", "--control", mesh.control_path()}, mesh.dir(), output) == 75);
  CHECK_THAT(output, Catch::Contains("PROBLEM: not serving yet"));
  CHECK(run_jetfan({"status", "--json", "--control", mesh.control_path()}, mesh.dir(), output) == 75);
  CHECK(nlohmann::json::parse(output)["state"] == "starting");
  mesh.start_server();
  REQUIRE(mesh.wait_for_log("serving consumer"));
  CHECK(run_jetfan({"status", "--json", "--control", mesh.control_path()}, mesh.dir(), output) == 0);
}
