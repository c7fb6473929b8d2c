// Limits on every peer, each tested with a peer that breaks it while a real handler keeps working
// and nothing is lost: total connections, instances per handler, silent connections, a peer that
// stops reading, a PING flood, a wedged handler, and running out of file descriptors.

#include <catch2/catch.hpp>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <fstream>
#include <set>

#include "mesh.hpp"
#include "raw_peer.hpp"
#include "unique_fd.hpp"

using namespace jetfan::testing;
using jetfan::UniqueFd;
using jetfan::proto::Frame;

namespace {

// jetfan's resident memory, from the kernel.
double rss_mib(pid_t pid) {
  std::istringstream status(read_file("/proc/" + std::to_string(pid) + "/status"));
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024;
  }
  return 0;
}

// Reads frames until one of `kind` comes (or none does).
std::optional<Frame> until(RawPeer& peer, Frame::Kind kind, std::chrono::milliseconds timeout = 20s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    auto frame = peer.next(100ms);
    if (frame && frame->kind == kind) return frame;
  }
  return std::nullopt;
}

// A connection that is made and then does nothing at all, not even read.
UniqueFd silent_connection(const std::string& path) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
  REQUIRE(::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  return fd;
}

// Sends until the other end is gone or `bytes` are sent; never reads.
std::size_t flood(int fd, const std::string& unit, std::size_t bytes) {
  std::string chunk;
  while (chunk.size() < 64 * 1024) chunk += unit;
  std::size_t sent = 0;
  while (sent < bytes) {
    const ssize_t n = ::send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<std::size_t>(n);
  }
  return sent;
}

}  // namespace

TEST_CASE("past socket.max_connections a newcomer is refused, the handlers connected go on", "[integration]") {
  Mesh mesh;
  std::string config = mesh.config("  - name: builder\n    patterns: [\"#\"]\n");
  config.insert(config.find("handlers:"), "  max_connections: 3\n");
  mesh.start_jetfan(config);
  mesh.start_handler("builder");
  RawPeer second(mesh.socket_path());
  second.send("HELLO builder 1\r\n");
  REQUIRE(until(second, Frame::Kind::kReady));
  RawPeer third(mesh.socket_path());
  third.send("HELLO builder 1\r\n");
  REQUIRE(until(third, Frame::Kind::kReady));
  RawPeer fourth(mesh.socket_path());
  const auto refused = until(fourth, Frame::Kind::kErr);
  REQUIRE(refused);
  CHECK_THAT(refused->error, Catch::Contains("socket.max_connections"));
  CHECK(fourth.wait_closed());
  second.send("PING\r\n");
  CHECK(until(second, Frame::Kind::kPong));
}

TEST_CASE("max_instances caps the instances of one handler", "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(
      mesh.config("  - name: builder\n    patterns: [\"#\"]\n    max_instances: 1\n"
                  "  - name: audit\n    patterns: [\"#\"]\n"));
  mesh.start_handler("builder");
  RawPeer again(mesh.socket_path());
  again.send("HELLO builder 1\r\n");
  const auto refused = until(again, Frame::Kind::kErr);
  REQUIRE(refused);
  CHECK_THAT(refused->error, Catch::Contains("already has its 1 instance(s) connected"));
  RawPeer audit(mesh.socket_path());
  audit.send("HELLO audit 1\r\n");
  CHECK(until(audit, Frame::Kind::kReady));
}

TEST_CASE("a flood of silent connections evicts its own oldest and never keeps a real handler out", "[integration]") {
  Mesh mesh;
  std::string config = mesh.config("  - name: builder\n    patterns: [\"#\"]\n");
  config.insert(config.find("handlers:"), "  max_unidentified: 4\n  hello_timeout: 1m\n");
  mesh.start_jetfan(config);
  std::vector<std::unique_ptr<RawPeer>> silent;
  for (int i = 0; i < 40; ++i) silent.push_back(std::make_unique<RawPeer>(mesh.socket_path()));
  mesh.start_handler("builder");  // says HELLO at once, amid the flood
  const auto seq = mesh.publish("a.b", "through the flood");
  REQUIRE(mesh.wait_seen("builder", 1));
  CHECK(mesh.seen("builder")[0].stream_seq == seq);
  // All but the newest four were evicted with a reason.
  std::size_t evicted = 0;
  for (auto& peer : silent) {
    if (auto err = until(*peer, Frame::Kind::kErr, 200ms)) {
      CHECK_THAT(err->error, Catch::Contains("socket.max_unidentified"));
      ++evicted;
    }
  }
  CHECK(evicted >= 36);
}

TEST_CASE("a peer that stops reading is cut off at max_output_buffer, what it had goes to another instance",
          "[integration]") {
  Mesh mesh;
  // The MSG lines of 60 deliveries being written and of 60 more queued behind them (about 60
  // bytes each in protocol version 2, which the real instance speaks) stay under 8,192 bytes: a
  // real instance, however slowly it reads, is never over the limit. Only bytes jetfan makes count
  // against it (bodies are shared, budgeted by max_held_bytes), so the stuck peer goes over it
  // with PONGs.
  std::string config = mesh.config("  - name: builder\n    patterns: [\"#\"]\n    max_inflight: 60\n");
  config.insert(config.find("handlers:"), "  max_output_buffer: 8192\n");
  mesh.start_jetfan(config);
  RawPeer stuck(mesh.socket_path());  // says HELLO, then never reads again
  stuck.send("HELLO builder 1\r\n");
  REQUIRE(mesh.wait_for_log("handler \"builder\" (connection 1"));
  const std::string big(64 * 1024, 'x');
  std::set<std::uint64_t> published;
  for (int i = 0; i < 200; ++i) published.insert(mesh.publish("a.b", big));
  // Once jetfan holds all 200, 60 of them (3.75 MiB) are on their way to the stuck peer, far more
  // than its socket takes: what jetfan answers it from now on waits in jetfan's output.
  REQUIRE(wait_until([&] { return mesh.state().num_ack_pending == 200; }));
  CHECK(flood(stuck.fd(), "PING\r\n", 64u << 20) < (64u << 20));
  REQUIRE(mesh.wait_for_log("does not read what jetfan sends"));
  CHECK_THAT(mesh.jetfan_log(), Catch::Contains("socket.max_output_buffer (8192)"));
  mesh.start_handler("builder");  // a real instance gets everything, the cut-off peer's share too
  REQUIRE(mesh.wait_settled(60s));
  std::set<std::uint64_t> seen;
  for (const auto& s : mesh.seen("builder")) seen.insert(s.stream_seq);
  CHECK(seen == published);
}

TEST_CASE("a PING flood from a peer that never reads is cut off, and jetfan's memory stays small", "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config("  - name: builder\n    patterns: [\"#\"]\n"));
  mesh.start_handler("builder");
  const double before = rss_mib(mesh.jetfan().pid());
  for (int i = 0; i < 4; ++i) {
    RawPeer flooder(mesh.socket_path());
    flooder.send("HELLO builder 1\r\n");
    // Sends until jetfan hangs up; 300 MiB if it never did.
    const std::size_t sent = flood(flooder.fd(), "PING\r\n", 300u << 20);
    CHECK(sent < (300u << 20));
  }
  REQUIRE(mesh.wait_for_log("does not read what jetfan sends"));
  CHECK(rss_mib(mesh.jetfan().pid()) < before + 32);
  mesh.publish("a.b", "still served");
  REQUIRE(mesh.wait_seen("builder", 1));
  REQUIRE(mesh.wait_settled());
}

TEST_CASE("a handler silent with nothing in flight is PINGed, and closed as wedged if it does not answer",
          "[integration]") {
  Mesh mesh;
  std::string config = mesh.config("  - name: builder\n    patterns: [\"#\"]\n");
  config.insert(config.find("handlers:"), "  idle_timeout: 300ms\n  ping_timeout: 300ms\n");
  mesh.start_jetfan(config);
  auto& live = mesh.start_handler("builder");  // the C++ client answers PING while it waits for messages
  RawPeer wedged(mesh.socket_path());
  wedged.send("HELLO builder 1\r\n");
  REQUIRE(until(wedged, Frame::Kind::kReady));
  REQUIRE(until(wedged, Frame::Kind::kPing));  // and it says nothing back
  const auto err = until(wedged, Frame::Kind::kErr);
  REQUIRE(err);
  CHECK_THAT(err->error, Catch::Contains("no answer to PING"));
  // The live handler outlasted many idle rounds and still gets messages.
  REQUIRE(mesh.wait_for_log("no answer to PING"));
  mesh.publish("a.b");
  REQUIRE(mesh.wait_seen("builder", 1));
  REQUIRE(mesh.wait_settled());
  CHECK(live.running());
  CHECK_THAT(mesh.jetfan_log(), !Catch::Contains("pid " + std::to_string(live.pid()) + ", uid " +
                                                 std::to_string(::getuid()) + ") disconnected"));
}

TEST_CASE("2,000 silent connections against a descriptor limit of 512 keep no handler out and do not flood the log",
          "[integration]") {
  Mesh mesh;
  std::ofstream(mesh.dir() + "/jetfan.yaml") << mesh.config("  - name: builder\n    patterns: [\"#\"]\n");
  std::vector<std::string> argv = {"prlimit", "--nofile=512:512"};
  for (const auto& word : mesh.jetfan_command()) argv.push_back(word);
  Process jetfan(argv, mesh.dir() + "/jetfan.log");
  REQUIRE(mesh.wait_for_log("serving consumer"));
  std::vector<UniqueFd> silent;
  for (int i = 0; i < 2000; ++i) silent.push_back(silent_connection(mesh.socket_path()));
  mesh.start_handler("builder");
  mesh.publish("a.b", "past two thousand");
  REQUIRE(mesh.wait_seen("builder", 1));
  REQUIRE(mesh.wait_settled());
  silent.clear();
  // Two thousand evictions, a handful of lines: the rest are counted, not written.
  CHECK(count_lines_containing(mesh.jetfan_log(), "disconnected: evicted") <= 10);
  REQUIRE(mesh.wait_for_log("more like the last warning were not logged", 30s));
  jetfan.signal(SIGTERM);
  CHECK(jetfan.wait(30s) == 0);
}
