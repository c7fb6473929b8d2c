#pragma once
// Test support: a second jetfan on a Mesh's durable, from a copy of its config with a handler socket
// (and so a control socket) of its own: <dir>/second.sock, <dir>/second.ctl, its log <dir>/second.log.
// Its handlers are started with start_handler(); what one sees goes to <dir>/<seen_as>-1.seen, which
// Mesh::seen(seen_as) reads.

#include <fstream>
#include <list>
#include <optional>
#include <stdexcept>
#include <string>

#include "mesh.hpp"

namespace jetfan::testing {

struct SecondJetfan {
  SecondJetfan(const Mesh& mesh, std::string config) : dir(mesh.dir()), log(mesh.dir() + "/second.log") {
    const std::string socket = mesh.socket_path();
    config.replace(config.find(socket), socket.size(), this->socket());
    std::ofstream(dir + "/second.yaml") << config;
    process.emplace(std::vector<std::string>{JETFAN_BIN, "serve", "--config", dir + "/second.yaml"}, log);
  }
  std::string socket() const { return dir + "/second.sock"; }
  std::string control() const { return dir + "/second.ctl"; }
  std::string text() const { return read_file(log); }
  bool wait_serving() const {
    return wait_until([&] { return text().find("serving consumer") != std::string::npos; });
  }
  // A test handler named `name` on this jetfan's socket, seen by the Mesh as `seen_as`.
  Process& start_handler(const std::string& name, const std::string& seen_as) {
    const std::string base = dir + "/" + seen_as + "-1";
    handlers.emplace_back(std::vector<std::string>{TEST_HANDLER_BIN, socket(), name, base + ".seen"}, base + ".log");
    if (!wait_until([&] { return read_file(base + ".log").find("ready") != std::string::npos; })) {
      throw std::runtime_error("handler " + name +
                               " did not connect to the second jetfan: " + read_file(base + ".log"));
    }
    return handlers.back();
  }

  std::string dir, log;
  std::optional<Process> process;
  std::list<Process> handlers;
};

}  // namespace jetfan::testing
