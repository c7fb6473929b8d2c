#pragma once
// DevSandbox: `jetfan dev -- CMD`, a handler author's first event without writing a config. It
// starts, in a private temp dir, what a module has around a handler: a nats-server with JetStream
// (its own store, a free loopback port), a stream DEV on dev.> and a durable pull consumer `dev`
// (made here, as a controller would: `serve` itself never makes one), a config for them, `jetfan
// serve`, and CMD as handler NAME: "{socket}" and "{handler}" in its words are the socket's path and
// the handler's name (`jetfan dev -- python3 examples/handler.py {socket} {handler}`), and its
// environment has them too ($JETFAN_SOCKET, $JETFAN_HANDLER); its output is the terminal's, and so
// are jetfan's warnings and the handler's connections ("jetfan: ...", by a LogFollower). Each line
// read from stdin, "KEY [PAYLOAD]", is published on dev.KEY, so the handler gets it with key KEY.
// End of input or Ctrl-C stops everything, the last started first (jetfan drains), and removes the
// temp dir (--keep leaves it, with the logs).
//
// Thread: the caller's, blocking, and a LogFollower's. For a person at a terminal, or a test
// feeding its stdin.

#include <string>
#include <vector>

namespace jetfan {

struct DevOptions {
  std::string handler = "dev";
  std::vector<std::string> patterns;  // empty: "#", every key
  std::string nats_server = "nats-server";
  bool keep = false;
  std::vector<std::string> command;  // CMD [ARG...]; required
};

// Returns the exit status: 0 after a clean stop, 69 when a part could not be started (which one,
// and its log, is said), 64 for a bad option.
int run_dev_sandbox(const DevOptions& options);

}  // namespace jetfan
