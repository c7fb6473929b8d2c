// docs/kubernetes/keda.yaml, the ScaledObject that puts the module of builder.yaml to sleep and
// wakes it: held to builder.yaml (the Deployment it scales, the stream and durable its NATS trigger
// watches, never more than one pod), and its Prometheus query run by promtool over what a real
// jetfan's /metrics says while it holds a known backlog, with the labels Prometheus's Kubernetes
// discovery adds. So a metric renamed, a label the query selects on that jetfan does not give, or
// a query that does not add up the backlog fails here, not in someone's cluster.

#include <yaml-cpp/yaml.h>

#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "control.hpp"
#include "mesh.hpp"

using namespace jetfan::testing;
using namespace std::chrono_literals;

namespace {

const std::string kDir = JETFAN_KUBERNETES_DIR;

YAML::Node only(const std::string& file, const std::string& kind) {
  std::vector<YAML::Node> found;
  for (const auto& document : YAML::LoadAllFromFile(kDir + "/" + file)) {
    if (document.IsMap() && document["kind"].as<std::string>() == kind) found.push_back(document);
  }
  REQUIRE(found.size() == 1);
  return found.front();
}

YAML::Node trigger(const YAML::Node& scaled, const std::string& type) {
  for (const auto& t : scaled["spec"]["triggers"]) {
    if (t["type"].as<std::string>() == type) return t;
  }
  FAIL("keda.yaml has no " << type << " trigger");
  return {};
}

// A promtool unit test: the series of one scrape, as the pod "builder-7d9f-x2x" in namespace
// "modules" gives them to Prometheus, and `query` expected to be `want` over them.
std::string promtool_test(const std::map<std::string, double>& scrape, const std::string& query, double want) {
  std::string out = "rule_files: []\nevaluation_interval: 1m\ntests:\n  - interval: 1m\n    input_series:\n";
  for (const auto& [series, value] : scrape) {
    const auto brace = series.find('{');
    const std::string name = series.substr(0, brace);
    std::string labels = brace == std::string::npos ? "" : series.substr(brace + 1, series.size() - brace - 2);
    labels += std::string(labels.empty() ? "" : ",") + "namespace=\"modules\",pod=\"builder-7d9f-x2x\"";
    char number[64];
    std::snprintf(number, sizeof number, "%.17g", value);
    out += "      - series: '" + name + "{" + labels + "}'\n        values: '" + number + "'\n";
  }
  std::string indented;  // a folded query may keep a line break where a line is indented more
  for (const char c : query) indented += c == '\n' ? std::string("\n          ") : std::string(1, c);
  char expected[64];
  std::snprintf(expected, sizeof expected, "%.17g", want);
  out += "    promql_expr_test:\n      - expr: |\n          " + indented + "\n        eval_time: 0m\n" +
         "        exp_samples:\n          - labels: '{}'\n            value: " + expected + "\n";
  return out;
}

}  // namespace

TEST_CASE("KEDA: the ScaledObject scales builder.yaml's Deployment between 0 and 1 pod, woken by its own consumer",
          "[integration]") {
  const YAML::Node scaled = only("keda.yaml", "ScaledObject");
  CHECK(scaled["apiVersion"].as<std::string>() == "keda.sh/v1alpha1");
  const YAML::Node deployment = only("builder.yaml", "Deployment");
  CHECK(scaled["spec"]["scaleTargetRef"]["name"].as<std::string>() == deployment["metadata"]["name"].as<std::string>());
  CHECK(scaled["spec"]["minReplicaCount"].as<int>() == 0);
  CHECK(scaled["spec"]["maxReplicaCount"].as<int>() == 1);  // one reader: never two jetfans on the durable
  const YAML::Node config = YAML::Load(only("builder.yaml", "ConfigMap")["data"]["builder.yaml"].as<std::string>());
  const YAML::Node nats = trigger(scaled, "nats-jetstream")["metadata"];
  CHECK(nats["stream"].as<std::string>() == config["consumer"]["stream"].as<std::string>());
  CHECK(nats["consumer"].as<std::string>() == config["consumer"]["durable"].as<std::string>());
  CHECK(nats["activationLagThreshold"].as<std::string>() == "0");
  CHECK(trigger(scaled, "prometheus")["metadata"]["activationThreshold"].as<std::string>() == "0");
}

TEST_CASE("KEDA: the ScaledObject's query adds up a real jetfan's backlog, and is 0 when nothing is owed",
          "[integration]") {
  if (std::system("command -v promtool > /dev/null") != 0) {
    std::puts("skipped: promtool not found (Debian package prometheus; scripts/deps.sh installs it)");
    return;
  }
  const std::string query =
      trigger(only("keda.yaml", "ScaledObject"), "prometheus")["metadata"]["query"].as<std::string>();
  Mesh mesh;
  mesh.start_jetfan(
      mesh.config("  - name: builder\n    patterns: [\"a.*\"]\n  - name: audit\n    patterns: [\"a.ok\"]\n",
                  "metrics:\n  listen: \"127.0.0.1:0\"\n"));
  const int port = metrics_port(mesh.jetfan_log());
  REQUIRE(port > 0);
  const auto run = [&](const std::string& name, double want) {
    const std::string file = mesh.dir() + "/" + name + ".test.yml";
    std::ofstream(file) << promtool_test(parse_metrics(http_get(port, "/metrics").body), query, want);
    Process promtool({"promtool", "test", "rules", file}, mesh.dir() + "/" + name + ".out");
    const auto status = promtool.wait(60s);
    INFO(read_file(mesh.dir() + "/" + name + ".out") << read_file(file));
    CHECK(status == 0);
  };
  // Polled once by jetfan, so that the consumer's num_pending is in the scrape too.
  REQUIRE(wait_until(
      [&] { return http_get(port, "/metrics").body.find("jetfan_consumer_num_pending ") != std::string::npos; }, 30s));
  run("idle", 0);
  // builder takes and ACKs its messages; audit is declared but not running: three are owed to it.
  mesh.start_handler("builder");
  for (int i = 0; i < 3; ++i) mesh.publish("a.ok");
  mesh.publish("a.other");  // builder's only
  REQUIRE(wait_until(
      [&] {
        const auto m = parse_metrics(http_get(port, "/metrics").body);
        const auto owed = m.find("jetfan_handler_backlog{handler=\"audit\"}");
        const auto built = m.find("jetfan_handler_backlog{handler=\"builder\"}");
        const auto pending = m.find("jetfan_consumer_num_pending");
        const auto unacked = m.find("jetfan_consumer_num_ack_pending");
        return owed != m.end() && owed->second == 3 && built != m.end() && built->second == 0 && pending != m.end() &&
               pending->second == 0 && unacked != m.end() && unacked->second == 3;
      },
      30s));
  run("owed", 6);  // 3 owed to audit, and the same 3 awaiting their ack at the server
}
