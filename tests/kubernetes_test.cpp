// docs/kubernetes/builder.yaml, read as kubectl would get it (yaml-cpp, every document), held to what
// docs/kubernetes/README.md says of it and to this build's jetfan: jetfan is a native sidecar whose
// arguments the CLI accepts and whose mounted config passes `jetfan check`; that config lies in a
// directory the ConfigMap volume is mounted on (never a subPath, which the kubelet does not update,
// so that an edit of the ConfigMap reaches `jetfan reload`); the socket lies in an emptyDir both
// containers mount, the credentials in a Secret only jetfan mounts; the probes ask /ready and /live
// on the port metrics.listen names. Also the container image's way of finding its config without
// --config ($JETFAN_CONFIG), which the image's CMD relies on.

#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "process.hpp"

using namespace jetfan::testing;

namespace {

const std::string kManifest = std::string(JETFAN_KUBERNETES_DIR) + "/builder.yaml";

struct TempDir {
  std::string path;
  TempDir() {
    std::string pattern = "/tmp/jetfan-k8s.XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp");
    path = pattern;
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

struct Manifest {
  std::vector<YAML::Node> documents;

  YAML::Node find(const std::string& kind, const std::string& name = "") const {
    for (const auto& document : documents) {
      if (document["kind"].as<std::string>() == kind &&
          (name.empty() || document["metadata"]["name"].as<std::string>() == name)) {
        return document;
      }
    }
    FAIL("builder.yaml has no " << kind << " " << name);
    return {};
  }
  YAML::Node pod() const { return find("Deployment")["spec"]["template"]["spec"]; }
  YAML::Node container(const std::string& list, const std::string& name) const {
    for (const auto& container : pod()[list]) {
      if (container["name"].as<std::string>() == name) return container;
    }
    FAIL("the pod's " << list << " have no container " << name);
    return {};
  }
  YAML::Node jetfan() const { return container("initContainers", "jetfan"); }
  YAML::Node handler() const { return container("containers", "handler"); }
  YAML::Node volume(const std::string& name) const {
    for (const auto& volume : pod()["volumes"]) {
      if (volume["name"].as<std::string>() == name) return volume;
    }
    FAIL("the pod has no volume " << name);
    return {};
  }
  // The mount of `container` under which `path` lies (the longest such mountPath), if any.
  static std::optional<YAML::Node> mount_of(const YAML::Node& container, const std::string& path) {
    std::optional<YAML::Node> best;
    std::size_t best_length = 0;
    for (const auto& mount : container["volumeMounts"]) {
      const auto at = mount["mountPath"].as<std::string>();
      const bool under = path == at || path.rfind(at + "/", 0) == 0;
      if (under && at.size() > best_length) {
        best = static_cast<const YAML::Node&>(mount);
        best_length = at.size();
      }
    }
    return best;
  }
  // The ConfigMap's file that `container` sees at `path` (a subPath mount, or a file of a mounted
  // directory).
  std::string configmap_file(const YAML::Node& container, const std::string& path) const {
    const auto mount = mount_of(container, path);
    REQUIRE(mount);
    const auto volume = this->volume((*mount)["name"].as<std::string>());
    REQUIRE(volume["configMap"]);
    std::string key = (*mount)["subPath"] ? (*mount)["subPath"].as<std::string>()
                                          : path.substr((*mount)["mountPath"].as<std::string>().size() + 1);
    const auto data = find("ConfigMap", volume["configMap"]["name"].as<std::string>())["data"][key];
    REQUIRE(data);
    return data.as<std::string>();
  }
  // The jetfan config the pod mounts: the file its --config names.
  std::string jetfan_config_path() const {
    const auto args = jetfan()["args"].as<std::vector<std::string>>();
    for (std::size_t i = 0; i + 1 < args.size(); ++i) {
      if (args[i] == "--config") return args[i + 1];
    }
    FAIL("jetfan's args have no --config");
    return {};
  }
  YAML::Node jetfan_config() const { return YAML::Load(configmap_file(jetfan(), jetfan_config_path())); }
};

Manifest load() {
  Manifest manifest;
  manifest.documents = YAML::LoadAllFromFile(kManifest);
  return manifest;
}

bool mounts_volume(const YAML::Node& container, const std::string& volume) {
  for (const auto& mount : container["volumeMounts"]) {
    if (mount["name"].as<std::string>() == volume) return true;
  }
  return false;
}

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("kubernetes manifests: every document parses and says what it is", "[integration]") {
  const auto manifest = load();
  REQUIRE(manifest.documents.size() == 4);
  for (const auto& document : manifest.documents) {
    INFO(YAML::Dump(document).substr(0, 200));
    CHECK(document["apiVersion"]);
    CHECK(document["kind"]);
    CHECK(document["metadata"]["name"]);
  }
  // One reader of the consumer: never two pods at once.
  const auto deployment = manifest.find("Deployment");
  CHECK(deployment["spec"]["replicas"].as<int>() == 1);
  CHECK(deployment["spec"]["strategy"]["type"].as<std::string>() == "Recreate");
}

TEST_CASE("kubernetes manifests: jetfan is a native sidecar whose arguments the CLI accepts", "[integration]") {
  const auto manifest = load();
  const auto jetfan = manifest.jetfan();
  CHECK(jetfan["restartPolicy"].as<std::string>() == "Always");
  CHECK_FALSE(jetfan["command"]);  // the image's entrypoint, jetfan, runs the args
  CHECK_THAT(file_text(std::string(JETFAN_SOURCE_DIR) + "/docker/Dockerfile"),
             Catch::Contains("ENTRYPOINT [\"jetfan\"]"));
  const auto args = jetfan["args"].as<std::vector<std::string>>();
  REQUIRE_FALSE(args.empty());
  CHECK(args.front() == "serve");

  TempDir dir;
  std::string output;
  auto with_help = args;
  with_help.emplace_back("--help");
  CHECK(run_jetfan(with_help, dir.path, output) == 0);
  INFO(output);
  CHECK_THAT(output, Catch::StartsWith("usage: jetfan"));
  // --help does not hide a flag jetfan does not know: it is what makes the check above mean something.
  auto wrong = args;
  wrong.insert(wrong.begin() + 1, "--no-such-flag");
  wrong.emplace_back("--help");
  CHECK(run_jetfan(wrong, dir.path, output) == 64);

  // The same command line as check, on the ConfigMap's file in place of the mounted one. check
  // reads the credentials as serve does: the Secret's nats.creds, with what its comment says to put
  // in in place of the placeholders (a JWT, and a throwaway NKey seed no server trusts).
  const std::string config = dir.path + "/builder.yaml";
  std::string config_text = manifest.configmap_file(jetfan, manifest.jetfan_config_path());
  const auto creds_path = manifest.jetfan_config()["nats"]["creds"].as<std::string>();
  const auto creds_mount = Manifest::mount_of(jetfan, creds_path);
  REQUIRE(creds_mount);
  const auto secret_volume = manifest.volume((*creds_mount)["name"].as<std::string>());
  REQUIRE(secret_volume["secret"]);
  const auto secret = manifest.find("Secret", secret_volume["secret"]["secretName"].as<std::string>());
  std::string creds = secret["stringData"][creds_path.substr(creds_path.rfind('/') + 1)].as<std::string>();
  for (const auto& [placeholder, value] :
       {std::pair<std::string, std::string>{"REPLACE-WITH-THE-MODULE-USER-JWT", "eyJhbGciOiJlZDI1NTE5In0.e30.c2ln"},
        std::pair<std::string, std::string>{"REPLACE-WITH-THE-MODULE-USER-SEED",
                                            "SUALRYWDBE53UDHUV4ZKIV3H2UYVXZY4D4ZESVMTTDRW4ZEPWGYSUENMHI"}}) {
    REQUIRE(creds.find(placeholder) != std::string::npos);
    creds.replace(creds.find(placeholder), placeholder.size(), value);
  }
  std::ofstream(dir.path + "/nats.creds") << creds;
  ::chmod((dir.path + "/nats.creds").c_str(), 0600);
  REQUIRE(config_text.find(creds_path) != std::string::npos);
  config_text.replace(config_text.find(creds_path), creds_path.size(), dir.path + "/nats.creds");
  std::ofstream(config) << config_text;
  auto check = args;
  check.front() = "check";
  for (auto& arg : check) {
    if (arg == manifest.jetfan_config_path()) arg = config;
  }
  const int status = run_jetfan(check, dir.path, output);
  INFO(output);
  CHECK(status == 0);
  CHECK_THAT(output, Catch::Contains(": OK: consumer \"node1_builder\" of stream \"EVENTS\""));
}

TEST_CASE(
    "kubernetes manifests: jetfan's config lies in a directory the ConfigMap volume is mounted on, never in a subPath "
    "mount, which the kubelet would never update",
    "[integration]") {
  const auto manifest = load();
  const auto jetfan = manifest.jetfan();
  const auto path = manifest.jetfan_config_path();
  const auto mount = Manifest::mount_of(jetfan, path);
  REQUIRE(mount);
  INFO(YAML::Dump(*mount));
  // The kubelet updates the files of a ConfigMap volume when the ConfigMap changes (a new directory,
  // then the ..data link swapped to it), but never what a subPath mount bound at the pod's start:
  // `jetfan reload` would read the old config again (tests/configmap_reload_test.cpp reloads through
  // the kubelet's layout).
  CHECK_FALSE((*mount)["subPath"]);
  CHECK_FALSE((*mount)["subPathExpr"]);
  CHECK((*mount)["readOnly"].as<bool>(false));
  const auto volume = manifest.volume((*mount)["name"].as<std::string>());
  REQUIRE(volume["configMap"]);
  const auto directory = (*mount)["mountPath"].as<std::string>();
  CHECK(std::filesystem::path(path).parent_path().string() == directory);
  const auto configmap = manifest.find("ConfigMap", volume["configMap"]["name"].as<std::string>());
  CHECK(configmap["data"][std::filesystem::path(path).filename().string()]);
  // No file of a ConfigMap or Secret reaches jetfan through a subPath either.
  for (const auto& each : jetfan["volumeMounts"]) {
    INFO(YAML::Dump(each));
    const auto source = manifest.volume(each["name"].as<std::string>());
    if (source["configMap"] || source["secret"] || source["projected"]) CHECK_FALSE(each["subPath"]);
  }
  // The Secret lies beside the config's directory, not mounted inside it.
  const auto creds = manifest.jetfan_config()["nats"]["creds"].as<std::string>();
  const auto secret_mount = Manifest::mount_of(jetfan, creds);
  REQUIRE(secret_mount);
  const auto secret_at = (*secret_mount)["mountPath"].as<std::string>();
  CHECK(secret_at != directory);
  CHECK(secret_at.rfind(directory + "/", 0) != 0);
  CHECK(directory.rfind(secret_at + "/", 0) != 0);
}

TEST_CASE("kubernetes manifests: the socket in an emptyDir both mount, the credentials in a Secret only jetfan mounts",
          "[integration]") {
  const auto manifest = load();
  const auto config = manifest.jetfan_config();
  const auto socket = config["socket"]["path"].as<std::string>();
  const auto directory = std::filesystem::path(socket).parent_path().string();

  const auto jetfan_mount = Manifest::mount_of(manifest.jetfan(), directory);
  const auto handler_mount = Manifest::mount_of(manifest.handler(), directory);
  REQUIRE(jetfan_mount);
  REQUIRE(handler_mount);
  const auto volume = (*jetfan_mount)["name"].as<std::string>();
  CHECK((*handler_mount)["name"].as<std::string>() == volume);
  CHECK((*handler_mount)["mountPath"].as<std::string>() == (*jetfan_mount)["mountPath"].as<std::string>());
  CHECK(manifest.volume(volume)["emptyDir"]);
  // An emptyDir is mode 0777 without the sticky bit, which jetfan refuses on the way to its socket:
  // an init container before jetfan gives it the sticky bit, and the socket lies in a directory
  // below it, which jetfan makes.
  CHECK(directory != (*jetfan_mount)["mountPath"].as<std::string>());
  const auto first = manifest.pod()["initContainers"][0];
  CHECK(first["name"].as<std::string>() == "socket-dir");
  CHECK(first["command"].as<std::vector<std::string>>() ==
        std::vector<std::string>{"chmod", "+t", (*jetfan_mount)["mountPath"].as<std::string>()});
  const auto sticky_mount = Manifest::mount_of(first, directory);
  REQUIRE(sticky_mount);
  CHECK((*sticky_mount)["name"].as<std::string>() == volume);
  CHECK(first["securityContext"]["capabilities"]["drop"][0].as<std::string>() == "ALL");
  bool told = false;
  for (const auto& variable : manifest.handler()["env"]) {
    if (variable["name"].as<std::string>() == "JETFAN_SOCKET") told = variable["value"].as<std::string>() == socket;
  }
  CHECK(told);

  const auto creds = config["nats"]["creds"].as<std::string>();
  const auto secret_mount = Manifest::mount_of(manifest.jetfan(), creds);
  REQUIRE(secret_mount);
  const auto secret_volume = manifest.volume((*secret_mount)["name"].as<std::string>());
  REQUIRE(secret_volume["secret"]);
  const auto key = creds.substr((*secret_mount)["mountPath"].as<std::string>().size() + 1);
  const auto secret = manifest.find("Secret", secret_volume["secret"]["secretName"].as<std::string>());
  CHECK((secret["stringData"][key] || secret["data"][key]));
  CHECK_FALSE(mounts_volume(manifest.handler(), (*secret_mount)["name"].as<std::string>()));
  CHECK_FALSE(mounts_volume(manifest.handler(), "config"));
}

TEST_CASE("kubernetes manifests: the probes ask /ready and /live on the port metrics.listen names", "[integration]") {
  const auto manifest = load();
  const auto listen = manifest.jetfan_config()["metrics"]["listen"].as<std::string>();
  const auto colon = listen.rfind(':');
  REQUIRE(colon != std::string::npos);
  const auto host = listen.substr(0, colon);
  const int port = std::stoi(listen.substr(colon + 1));
  // The kubelet probes the pod's address, never its loopback.
  CHECK(host != "127.0.0.1");
  CHECK(host != "localhost");
  CHECK(host != "[::1]");

  const auto jetfan = manifest.jetfan();
  auto port_of = [&](const YAML::Node& probe) {
    const auto named = probe["httpGet"]["port"].as<std::string>();
    for (const auto& declared : jetfan["ports"]) {
      if (declared["name"] && declared["name"].as<std::string>() == named) return declared["containerPort"].as<int>();
    }
    return std::stoi(named);
  };
  const std::vector<std::pair<std::string, std::string>> probes = {
      {"readinessProbe", "/ready"}, {"livenessProbe", "/live"}, {"startupProbe", "/live"}};
  for (const auto& [probe, path] : probes) {
    INFO(probe);
    REQUIRE(jetfan[probe]);
    CHECK(jetfan[probe]["httpGet"]["path"].as<std::string>() == path);
    CHECK(port_of(jetfan[probe]) == port);
  }
}

TEST_CASE("without --config, jetfan reads the config $JETFAN_CONFIG names, as the container image's CMD does",
          "[integration]") {
  TempDir dir;
  const std::string config = dir.path + "/jetfan.yaml";
  std::ofstream(config) << file_text(std::string(JETFAN_SOURCE_DIR) + "/config/jetfan.example.yaml");
  std::string output;
  ::unsetenv("JETFAN_CONFIG");
  CHECK(run_jetfan({"check"}, dir.path, output) == 64);
  CHECK_THAT(output, Catch::Contains("check needs --config FILE"));
  ::setenv("JETFAN_CONFIG", config.c_str(), 1);
  const int status = run_jetfan({"check"}, dir.path, output);
  ::unsetenv("JETFAN_CONFIG");
  INFO(output);
  CHECK(status == 0);
  CHECK_THAT(output, Catch::Contains(config + ": OK"));
}
