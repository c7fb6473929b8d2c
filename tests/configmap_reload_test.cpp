// A reload of a config that lies in a Kubernetes ConfigMap volume (docs/kubernetes/builder.yaml),
// after the kubelet has updated that volume: jetfan must read the new file through the path it was
// given, not the file it started on. The kubelet never rewrites a file in place: it writes each
// version of the ConfigMap into a directory of its own and swaps a link to it, then removes the old
// version; a jetfan that had resolved the links once, or kept the file it first read, would reload
// the old config or nothing.

#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "control.hpp"
#include "mesh.hpp"

using namespace jetfan::testing;
namespace fs = std::filesystem;

namespace {

// A directory laid out as the kubelet lays out a ConfigMap volume with one key:
//   ..2026_12_06_00_00_00.000000001/builder.yaml   the files of one version of the ConfigMap
//   ..data -> ..2026_12_06_00_00_00.000000001       the current version
//   builder.yaml -> ..data/builder.yaml             the key, as the container sees it
// An update writes the new version into a new directory beside the old one, makes a link
// ..data_tmp to it, renames that over ..data (the one atomic step: the key's link now leads to the
// new file), then removes the old version.
class ConfigMapVolume {
 public:
  ConfigMapVolume(std::string dir, std::string key, const std::string& text)
      : dir_(std::move(dir)), key_(std::move(key)) {
    fs::create_directories(dir_);
    version_ = write_version(text);
    fs::create_symlink(version_, dir_ + "/..data");
    fs::create_symlink("..data/" + key_, file());
  }

  // The path the container reads: the key's link.
  std::string file() const { return dir_ + "/" + key_; }
  // The directory of the current version, which an update removes.
  std::string version_dir() const { return dir_ + "/" + version_; }

  void update(const std::string& text) {
    const std::string old = version_;
    version_ = write_version(text);
    fs::create_symlink(version_, dir_ + "/..data_tmp");
    fs::rename(dir_ + "/..data_tmp", dir_ + "/..data");
    fs::remove_all(dir_ + "/" + old);
  }

 private:
  std::string write_version(const std::string& text) {
    ++count_;
    char name[64];
    std::snprintf(name, sizeof name, "..2026_12_06_00_%02d_00.%09d", count_ - 1, count_);
    fs::create_directory(dir_ + "/" + name);
    std::ofstream(dir_ + "/" + name + "/" + key_) << text;
    return name;
  }

  std::string dir_;
  std::string key_;
  std::string version_;
  int count_ = 0;
};

std::vector<std::string> keys_seen(const Mesh& mesh, const std::string& handler) {
  std::vector<std::string> keys;
  for (const auto& seen : mesh.seen(handler)) keys.push_back(seen.key);
  return keys;
}

}  // namespace

TEST_CASE("jetfan reload reads a ConfigMap volume the kubelet updated: the new file takes effect, twice over",
          "[integration]") {
  Mesh mesh;
  ConfigMapVolume volume(mesh.dir() + "/configmap", "builder.yaml",
                         mesh.config("  - name: builder\n    patterns: [\"a.*\"]\n"));
  // Started as the manifest starts it: --config names the key's link in the volume.
  auto argv = mesh.jetfan_command();
  bool named = false;
  for (std::size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] == "--config") {
      argv[i + 1] = volume.file();
      named = true;
    }
  }
  REQUIRE(named);
  Process jetfan(argv, mesh.dir() + "/jetfan.log");
  REQUIRE(mesh.wait_for_log("serving consumer"));
  mesh.start_handler("builder");
  mesh.publish("a.one");
  mesh.publish("b.one");  // not the builder's yet: no recipient
  REQUIRE(mesh.wait_settled());
  CHECK(keys_seen(mesh, "builder") == std::vector<std::string>{"a.one"});

  // The kubelet's update; the version jetfan started on is gone after it.
  const std::string started_on = volume.version_dir();
  volume.update(mesh.config("  - name: builder\n    patterns: [\"a.*\", \"b.*\"]\n"));
  REQUIRE_FALSE(fs::exists(started_on));
  const std::string reply = control_request(mesh.control_path(), "RELOAD");
  INFO(reply);
  REQUIRE_THAT(reply, Catch::StartsWith("OK reloaded " + volume.file() + "\n"));
  CHECK_THAT(reply, Catch::Contains("handlers.builder.patterns: [a.*] -> [a.*, b.*]"));
  mesh.publish("b.two");
  REQUIRE(mesh.wait_settled());
  CHECK(keys_seen(mesh, "builder") == std::vector<std::string>{"a.one", "b.two"});

  // Once more, as the README says to: `jetfan reload --config` on the same link, which it reads
  // for the control socket too. A handler added.
  volume.update(
      mesh.config("  - name: builder\n    patterns: [\"a.*\", \"b.*\"]\n"
                  "  - name: fresh\n    patterns: [\"c.*\"]\n"));
  Process cli({JETFAN_BIN, "reload", "--config", volume.file()}, mesh.dir() + "/cli.out");
  CHECK(cli.wait(20s) == 0);
  const std::string printed = read_file(mesh.dir() + "/cli.out");
  INFO(printed);
  CHECK_THAT(printed, Catch::StartsWith("OK reloaded " + volume.file() + "\n"));
  CHECK_THAT(printed, Catch::Contains("handlers: added fresh [c.*]"));
  mesh.start_handler("fresh");
  mesh.publish("c.one");
  REQUIRE(mesh.wait_settled());
  CHECK(keys_seen(mesh, "fresh") == std::vector<std::string>{"c.one"});
  CHECK(keys_seen(mesh, "builder") == std::vector<std::string>{"a.one", "b.two"});
}
