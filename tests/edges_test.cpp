// The edges around the handler socket (issue 34), against the real binary: the metrics port's caps
// under a descriptor limit, where jetfan may make its sockets, and who may use the control socket.
// The cases that run jetfan or its commands as another user make users, so they need root; without
// it they say so and skip.

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "control.hpp"
#include "mesh.hpp"
#include "test_users.hpp"
#include "unique_fd.hpp"

using namespace jetfan::testing;
using jetfan::UniqueFd;

namespace {

const std::string kBuilder = "  - name: builder\n    patterns: [\"#\"]\n";
const std::string kMetrics = "metrics:\n  listen: \"127.0.0.1:0\"\n";

UniqueFd tcp_connect(int port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
  return fd;
}

// Everything the peer writes until it closes; nullopt if it has not closed within `timeout`.
std::optional<std::string> read_to_close(int fd, std::chrono::milliseconds timeout) {
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buffer[4096];
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n <= 0) return out;  // closed (or reset)
    out.append(buffer, static_cast<std::size_t>(n));
  }
}

void send_all(int fd, const std::string& text) {
  REQUIRE(::send(fd, text.data(), text.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(text.size()));
}

// A Unix socket listening at `path` for as long as it lives.
struct Listener {
  explicit Listener(const std::string& path) : fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
    REQUIRE(::bind(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
    REQUIRE(::listen(fd.get(), 4) == 0);
  }
  UniqueFd fd;
};

// The config with socket.path (and so the control socket beside it) moved to `socket_path`.
std::string with_socket_path(const Mesh& mesh, const std::string& socket_path, const std::string& extra = "") {
  std::string config = mesh.config(kBuilder, extra);
  config.replace(config.find(mesh.socket_path()), mesh.socket_path().size(), socket_path);
  return config;
}

// Runs a jetfan command (status, pause, ...) as `runner` says, and returns its exit status and output.
std::pair<int, std::string> jetfan_as(const Mesh& mesh, const std::vector<std::string>& runner,
                                      const std::vector<std::string>& args) {
  std::vector<std::string> argv = runner;
  argv.emplace_back(JETFAN_BIN);
  argv.insert(argv.end(), args.begin(), args.end());
  const std::string out = mesh.dir() + "/command.out";
  std::filesystem::remove(out);
  Process command(argv, out);
  const auto status = command.wait(std::chrono::seconds(20));
  REQUIRE(status);
  return {*status, read_file(out)};
}

}  // namespace

TEST_CASE("400 connections to the metrics port under a descriptor limit of 300 keep neither a handler nor status out",
          "[integration]") {
  Mesh mesh;
  std::ofstream(mesh.dir() + "/jetfan.yaml") << mesh.config(kBuilder, kMetrics);
  std::vector<std::string> argv = {"prlimit", "--nofile=300:300"};
  for (const auto& word : mesh.jetfan_command()) argv.push_back(word);
  Process jetfan(argv, mesh.dir() + "/jetfan.log");
  REQUIRE(mesh.wait_for_log("serving consumer"));
  CHECK_THAT(mesh.jetfan_log(),
             Catch::Contains("file descriptors: limit 300") && Catch::Contains("32 for metrics, 16 for control"));
  const int port = metrics_port(mesh.jetfan_log());
  REQUIRE(port > 0);

  std::vector<UniqueFd> flood;
  for (int i = 0; i < 400; ++i) flood.push_back(tcp_connect(port));
  // Past the cap, a connection is answered 503 and closed at once: the last one made is among them.
  const auto refused = read_to_close(flood.back().get(), 10s);
  REQUIRE(refused);
  CHECK_THAT(*refused, Catch::StartsWith("HTTP/1.1 503"));

  mesh.start_handler("builder");
  mesh.publish("a.b", "during the flood");
  REQUIRE(mesh.wait_seen("builder", 1));
  REQUIRE(mesh.wait_settled());
  const auto [status, said] = jetfan_as(mesh, {}, {"status", "--control", mesh.control_path()});
  CHECK(status == 0);
  CHECK_THAT(said, Catch::Contains("serving"));
  CHECK_THAT(mesh.jetfan_log(), Catch::Contains("connections open (metrics.max_connections)"));
  CHECK(count_lines_containing(mesh.jetfan_log(), "accept failed") <= 3);

  flood.clear();
  REQUIRE(wait_until([&] { return http_get(port, "/live").status == 200; }));
  jetfan.signal(SIGTERM);
  CHECK(jetfan.wait(30s) == 0);
}

TEST_CASE("a metrics request with a body past its limit, or one that stops halfway, is closed unanswered",
          "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config(kBuilder, kMetrics));
  const int port = metrics_port(mesh.jetfan_log());
  REQUIRE(port > 0);
  auto big = tcp_connect(port);
  send_all(big.get(), "POST /live HTTP/1.1\r\nHost: x\r\nContent-Length: 4096\r\n\r\n" + std::string(4096, 'a'));
  const auto big_answer = read_to_close(big.get(), 10s);
  REQUIRE(big_answer);
  CHECK(big_answer->empty());  // not even a 405: the body was past its limit before the answer

  auto half = tcp_connect(port);
  send_all(half.get(), "GET /live HTTP/1.1\r\nHost: x\r\n");  // and never the end of the header
  const auto half_answer = read_to_close(half.get(), 20s);
  REQUIRE(half_answer);
  CHECK(half_answer->empty());
  CHECK(http_get(port, "/live").status == 200);  // the port itself serves on
}

TEST_CASE("a socket or control path in or below a directory anyone may write without the sticky bit is refused",
          "[integration]") {
  Mesh mesh({.start_server = false});
  const std::string open = mesh.dir() + "/open";
  REQUIRE(::mkdir(open.c_str(), 0700) == 0);
  REQUIRE(::chmod(open.c_str(), 0777) == 0);

  SECTION("control.path in it") {
    auto& jetfan = mesh.start_jetfan(mesh.config(kBuilder, "control:\n  path: " + open + "/jetfan.ctl\n"), false);
    REQUIRE(jetfan.wait(20s) == 78);
    CHECK_THAT(mesh.jetfan_log(), Catch::Contains("control.path: " + open + " (mode 0777) may be written by anyone"));
  }
  SECTION("socket.path two levels below it: refused, and nothing made there") {
    auto& jetfan = mesh.start_jetfan(with_socket_path(mesh, open + "/run/x/jetfan.sock"), false);
    REQUIRE(jetfan.wait(20s) == 78);
    CHECK_THAT(mesh.jetfan_log(), Catch::Contains(open + " (mode 0777) may be written by anyone"));
    CHECK_FALSE(std::filesystem::exists(open + "/run"));
  }
}

TEST_CASE("a socket.path in a missing directory: it is made 0750 first, and the control socket beside it serves",
          "[integration]") {
  Mesh mesh;
  const std::string directory = mesh.dir() + "/run/jetfan";
  mesh.start_jetfan(with_socket_path(mesh, directory + "/builder.sock"));
  struct stat info {};
  REQUIRE(::stat(directory.c_str(), &info) == 0);
  CHECK((info.st_mode & 07777) == 0750);
  const auto [status, said] = jetfan_as(mesh, {}, {"status", "--control", directory + "/builder.ctl"});
  CHECK(status == 0);
  CHECK_THAT(said, Catch::Contains("serving"));
}

TEST_CASE("a live socket jetfan may not connect to is someone else's: jetfan stops with 69 and leaves it",
          "[integration]") {
  Mesh mesh;  // jetfan makes its handler socket once the consumer is bound
  Listener theirs(mesh.socket_path());
  std::vector<std::string> runner;
  std::unique_ptr<TestUsers> users;
  if (::geteuid() == 0) {
    // Root may connect to any socket: jetfan runs as a user the socket's mode keeps out.
    users = std::make_unique<TestUsers>();
    REQUIRE(users->made);
    REQUIRE(::chmod(mesh.dir().c_str(), 01777) == 0);
    REQUIRE(::chmod(mesh.socket_path().c_str(), 0600) == 0);
    runner = TestUsers::as(users->stranger);
  } else {
    REQUIRE(::chmod(mesh.socket_path().c_str(), 0) == 0);  // not even its owner may connect
  }
  std::ofstream(mesh.dir() + "/jetfan.yaml") << mesh.config(kBuilder);
  ::chmod((mesh.dir() + "/jetfan.yaml").c_str(), 0644);
  std::vector<std::string> argv = runner;
  for (const auto& word : mesh.jetfan_command()) argv.push_back(word);
  Process jetfan(argv, mesh.dir() + "/jetfan.log");
  REQUIRE(jetfan.wait(20s) == 69);
  CHECK_THAT(mesh.jetfan_log(), Catch::Contains("socket.path: " + mesh.socket_path() +
                                                " is a socket jetfan may not connect to (Permission denied)") &&
                                    Catch::Contains("not touching it"));
  struct stat info {};
  REQUIRE(::lstat(mesh.socket_path().c_str(), &info) == 0);
  CHECK(S_ISSOCK(info.st_mode));
  // Still the listener's own socket: a connection reaches it.
  REQUIRE(::chmod(mesh.socket_path().c_str(), 0600) == 0);
  UniqueFd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, mesh.socket_path().c_str(), mesh.socket_path().size() + 1);
  CHECK(::connect(probe.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
}

TEST_CASE("a directory on the way that another user owns is refused", "[integration][root]") {
  if (skip_unless_root()) return;
  TestUsers users;
  REQUIRE(users.made);
  Mesh mesh({.start_server = false});
  const std::string theirs = mesh.dir() + "/theirs";
  REQUIRE(::mkdir(theirs.c_str(), 0755) == 0);
  REQUIRE(::chown(theirs.c_str(), TestUsers::uid_of(users.stranger), TestUsers::gid_of(users.stranger)) == 0);
  auto& jetfan = mesh.start_jetfan(with_socket_path(mesh, theirs + "/jetfan.sock"), false);
  REQUIRE(jetfan.wait(20s) == 78);
  CHECK_THAT(mesh.jetfan_log(),
             Catch::Contains(theirs + " belongs to uid " + std::to_string(TestUsers::uid_of(users.stranger))));
}

TEST_CASE("control by another uid: refused off the allow lists, reading only on allow_read, root always",
          "[integration][root]") {
  if (skip_unless_root()) return;
  TestUsers users;
  REQUIRE(users.made);
  Mesh mesh;
  REQUIRE(::chmod(mesh.dir().c_str(), 01777) == 0);  // so that the test users reach the socket
  const std::string control = "control:\n  mode: \"0666\"\n  allow_read: {users: [" + users.member + "]}\n";
  mesh.start_jetfan(mesh.config(kBuilder, control));
  CHECK_THAT(mesh.jetfan_log(), Catch::Contains("control.mode 0666 is wider than 0660"));
  const std::vector<std::string> status = {"status", "--control", mesh.control_path()};
  const std::vector<std::string> pause = {"pause", "--handler", "builder", "--control", mesh.control_path()};

  const auto [stranger_status, stranger_said] = jetfan_as(mesh, TestUsers::as(users.stranger), status);
  CHECK(stranger_status != 0);
  CHECK_THAT(stranger_said, Catch::Contains("not allowed: uid " + std::to_string(TestUsers::uid_of(users.stranger))));
  CHECK_THAT(stranger_said, !Catch::Contains("builder"));  // told nothing of jetfan
  const auto [stranger_pause, stranger_pause_said] = jetfan_as(mesh, TestUsers::as(users.stranger), pause);
  CHECK(stranger_pause != 0);

  const auto [member_status, member_said] = jetfan_as(mesh, TestUsers::as(users.member), status);
  CHECK(member_status == 0);
  CHECK_THAT(member_said, Catch::Contains("serving"));
  const auto [member_pause, member_pause_said] = jetfan_as(mesh, TestUsers::as(users.member), pause);
  CHECK(member_pause != 0);
  CHECK_THAT(member_pause_said, Catch::Contains("may only read"));

  // Nothing was paused: a message still reaches the handler.
  mesh.start_handler("builder");
  mesh.publish("a.b", "not paused");
  REQUIRE(mesh.wait_seen("builder", 1));
  CHECK_THAT(mesh.jetfan_log(), Catch::Contains("control: refused \"PAUSE builder\" from pid") &&
                                    !Catch::Contains("handler \"builder\" paused"));

  const auto [root_pause, root_said] = jetfan_as(mesh, {}, pause);
  CHECK(root_pause == 0);
  CHECK_THAT(root_said, Catch::Contains("paused"));
}

TEST_CASE("control.mode that lets every user connect needs an allow list", "[integration]") {
  Mesh mesh({.start_server = false});
  auto& jetfan = mesh.start_jetfan(mesh.config(kBuilder, "control:\n  mode: \"0666\"\n"), false);
  REQUIRE(jetfan.wait(20s) == 78);
  CHECK_THAT(mesh.jetfan_log(), Catch::Contains("control.mode: \"0666\" lets every local user connect"));
}
