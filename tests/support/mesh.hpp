#pragma once
// Test support: a whole mesh for one test, made of real parts.
//   - a temp dir, removed afterwards;
//   - a real nats-server (nats_server_binary()) with JetStream and file storage in it, on a port it chose (-p -1),
//   restartable
//     on that port;
//   - stream EVENTS on events.> and durable pull consumer node1_builder, made as a controller would;
//   - the real jetfan binary, and real handler processes (tests/test_handler) on the real socket.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mesh_controller.hpp"
#include "process.hpp"

namespace jetfan::testing {

using namespace std::chrono_literals;

// The nats-server binary tests start: $JETFAN_NATS_SERVER when set (scripts/compat.sh points it at
// another release), otherwise "nats-server" on PATH, Debian's.
std::string nats_server_binary();

// The version `nats_server_binary() --version` prints, e.g. {2, 15, 1}; {0, 0, 0} if it cannot be read.
struct ServerVersion {
  int major = 0, minor = 0, patch = 0;
  bool at_least(int ma, int mi, int pa = 0) const {
    return major != ma ? major > ma : minor != mi ? minor > mi : patch >= pa;
  }
};
ServerVersion nats_server_version();

struct MeshOptions {
  std::string ack_policy = "explicit";
  std::chrono::milliseconds ack_wait = 30s;
  std::int64_t max_deliver = -1;
  std::int64_t max_ack_pending = 1000;
  std::string token;                        // nats-server requires this token when set
  std::string server_conf;                  // nats-server config file text, e.g. users and their permissions
  std::string controller_credentials;       // "user:password" the controller connects with
  example::ControllerAuth controller_auth;  // creds or TLS files the controller connects with
  std::string scheme = "nats";              // of url(): "tls" for a server configured for TLS in server_conf
  bool create_consumer = true;
  bool start_server = true;
  bool jetstream = true;  // false: a server without JetStream, and no stream or consumer
};

// One line a test handler wrote for a message it was given.
struct Seen {
  std::uint64_t stream_seq = 0;
  std::string key;
  std::uint64_t deliveries = 0;
  std::string payload;
};

// One line a test handler started with {"--details", "yes"} wrote for a message it was given.
struct SeenDetail {
  std::uint64_t stream_seq = 0;
  std::uint64_t deliveries = 0;         // its own count (MSG's <deliveries>)
  std::uint64_t server_deliveries = 0;  // the server's (protocol version 2)
  std::string headers;                  // the header block, byte for byte; empty when none
};

class Mesh {
 public:
  explicit Mesh(MeshOptions options = {});
  ~Mesh();

  const std::string& dir() const { return dir_; }
  std::string url() const;
  std::string socket_path() const { return dir_ + "/jetfan.sock"; }
  // The control socket, by default beside the handler socket.
  std::string control_path() const { return dir_ + "/jetfan.ctl"; }

  void start_server();
  void stop_server();              // SIGTERM, waits for it to exit
  void kill_server();              // SIGKILL, as a crash: waits for it to die
  void signal_server(int signal);  // e.g. SIGSTOP: a server that takes messages and answers nothing

  example::MeshController& controller();
  // The next controller() connects anew (after a server restart broke the last one's connection).
  void controller_reset() { controller_.reset(); }
  std::uint64_t publish(const std::string& key, const std::string& payload = "x");
  example::ConsumerState state();

  // The config jetfan runs with: `handlers` and `extra` are YAML spliced in.
  std::string config(const std::string& handlers, const std::string& extra = "",
                     const std::string& nats_extra = "") const;
  // Writes the config and starts `jetfan serve`. With wait_ready, waits until it serves.
  Process& start_jetfan(const std::string& config_text, bool wait_ready = true, const SpawnExtras& extras = {});
  // The command line start_jetfan runs, for tests that start jetfan some other way.
  std::vector<std::string> jetfan_command() const;
  std::string jetfan_log() const { return read_file(dir_ + "/jetfan.log"); }
  bool wait_for_log(const std::string& part, std::chrono::milliseconds timeout = 20s,
                    std::size_t occurrences = 1) const;
  Process& jetfan() { return *jetfan_; }

  // Starts tests/test_handler as `name`; what it sees goes to <dir>/<name>-<n>.seen.
  // The handler's answer per message is set by the payload (see test_handler.cpp).
  // `runner` goes before the command, e.g. {"setpriv", "--reuid=...", ...} to run it as another user.
  // With wait_ready false, it does not wait for the handler to be admitted.
  Process& start_handler(const std::string& name, const std::vector<std::string>& flags = {},
                         const std::vector<std::string>& runner = {}, bool wait_ready = true);
  std::string handler_log(const std::string& name, int instance = 1) const;
  std::vector<Seen> seen(const std::string& name, int instance = 1) const;
  std::vector<SeenDetail> details(const std::string& name, int instance = 1) const;
  bool wait_seen(const std::string& name, std::size_t count, int instance = 1,
                 std::chrono::milliseconds timeout = 20s) const;

  // Waits until the server says nothing is pending or awaiting ack for the consumer, and that it
  // has delivered up to the last message publish() stored. The second part matters on newer servers:
  // on 2.15.1, consumer info right after the publish's ack once still said 0 pending and 0 awaiting
  // ack, as if the consumer had not yet heard of the message.
  bool wait_settled(std::chrono::milliseconds timeout = 20s);

 private:
  MeshOptions options_;
  std::string dir_;
  int port_ = 0;
  std::unique_ptr<Process> server_;
  std::unique_ptr<example::MeshController> controller_;
  std::unique_ptr<Process> jetfan_;
  std::vector<std::unique_ptr<Process>> handlers_;
  std::vector<std::pair<std::string, int>> handler_names_;
  std::uint64_t last_published_ = 0;  // the stream sequence of publish()'s last message
};

}  // namespace jetfan::testing
