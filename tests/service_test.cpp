// jetfan as a service: what it tells systemd (a real datagram NOTIFY_SOCKET, as systemd gives it),
// socket activation (Debian's systemd-socket-activate, and a listening socket held across
// restarts as systemd holds it), exit statuses by class, and its logs.

#include <catch2/catch.hpp>

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "mesh.hpp"
#include "raw_peer.hpp"
#include "unique_fd.hpp"

using namespace jetfan::testing;
using jetfan::UniqueFd;
using jetfan::proto::Frame;

namespace {

const std::string kBuilder = "  - name: builder\n    patterns: [\"#\"]\n";

sockaddr_un unix_address(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  return address;
}

// The receiving end of NOTIFY_SOCKET: collects what jetfan sends systemd.
class NotifySocket {
 public:
  explicit NotifySocket(const std::string& path) : path_(path), fd_(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) {
    const auto address = unix_address(path);
    REQUIRE(::bind(fd_.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
  }
  std::string env() const { return "NOTIFY_SOCKET=" + path_; }

  // Waits until `count` datagrams containing `part` have come; all datagrams are kept in order.
  bool wait_for(const std::string& part, std::size_t count = 1, std::chrono::milliseconds timeout = 20s) {
    return wait_until(
        [&] {
          drain();
          return matching(part) >= count;
        },
        timeout);
  }
  std::size_t matching(const std::string& part) const {
    std::size_t n = 0;
    for (const auto& d : received_) n += d.find(part) != std::string::npos;
    return n;
  }
  // The index of the first datagram containing `part`, or -1.
  long first(const std::string& part) const {
    for (std::size_t i = 0; i < received_.size(); ++i) {
      if (received_[i].find(part) != std::string::npos) return static_cast<long>(i);
    }
    return -1;
  }
  const std::vector<std::string>& received() const { return received_; }

 private:
  void drain() {
    char buffer[4096];
    for (;;) {
      const ssize_t n = ::recv(fd_.get(), buffer, sizeof buffer, MSG_DONTWAIT);
      if (n <= 0) return;
      received_.emplace_back(buffer, static_cast<std::size_t>(n));
    }
  }
  std::string path_;
  UniqueFd fd_;
  std::vector<std::string> received_;
};

bool can_connect(const std::string& path) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const auto address = unix_address(path);
  return ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0;
}

}  // namespace

TEST_CASE("jetfan tells systemd READY once it serves, STATUS as it changes, WATCHDOG from its loop, and STOPPING",
          "[integration]") {
  Mesh mesh;
  NotifySocket notify(mesh.dir() + "/notify.sock");
  auto& jetfan = mesh.start_jetfan(mesh.config(kBuilder), false, {{notify.env(), "WATCHDOG_USEC=400000"}, {}});
  REQUIRE(notify.wait_for("READY=1"));
  // READY came after the consumer was bound and the socket listened, and not before.
  CHECK_THAT(mesh.jetfan_log(), Catch::Contains("bound consumer") && Catch::Contains("serving consumer"));
  CHECK(can_connect(mesh.socket_path()));
  const std::string& ready = notify.received().at(static_cast<std::size_t>(notify.first("READY=1")));
  CHECK_THAT(ready, Catch::Contains("STATUS=serving: 0 handler connection(s)"));

  // WATCHDOG_USEC=400ms: pings every 200ms from the event loop, for as long as it runs.
  REQUIRE(notify.wait_for("WATCHDOG=1", 5));
  CHECK_THAT(mesh.jetfan_log(), Catch::Contains("pinging every 200ms"));

  mesh.start_handler("builder", {"--default", "sleep1500"});
  REQUIRE(notify.wait_for("STATUS=serving: 1 handler connection(s); 0 message(s) held, 0 in flight"));
  mesh.publish("a.b");
  REQUIRE(mesh.wait_seen("builder", 1));
  REQUIRE(notify.wait_for("1 message(s) held, 1 in flight"));

  // Stopping with a delivery in flight: STOPPING, and more time asked for the drain.
  jetfan.signal(SIGTERM);
  REQUIRE(notify.wait_for("STOPPING=1"));
  REQUIRE(notify.wait_for("EXTEND_TIMEOUT_USEC="));
  CHECK(notify.first("STOPPING=1") > notify.first("READY=1"));
  REQUIRE(jetfan.wait(30s) == 0);
  REQUIRE(mesh.wait_settled());
}

TEST_CASE("without NOTIFY_SOCKET jetfan runs the same, telling no one", "[integration]") {
  Mesh mesh;
  auto& jetfan = mesh.start_jetfan(mesh.config(kBuilder));
  CHECK_THAT(mesh.jetfan_log(), !Catch::Contains("watchdog"));
  jetfan.signal(SIGTERM);
  CHECK(jetfan.wait(30s) == 0);
}

TEST_CASE("socket activation: a handler that connects before jetfan starts is served once it does", "[integration]") {
  Mesh mesh;
  std::ofstream(mesh.dir() + "/jetfan.yaml") << mesh.config(kBuilder);
  // systemd-socket-activate listens, and starts jetfan on the first connection with the socket passed.
  std::vector<std::string> argv = {"systemd-socket-activate", "-l", mesh.socket_path()};
  for (const auto& word : mesh.jetfan_command()) argv.push_back(word);
  Process activator(argv, mesh.dir() + "/jetfan.log");
  REQUIRE(wait_until([&] { return can_connect(mesh.socket_path()); }));
  CHECK_FALSE(mesh.wait_for_log("starting with", 0ms));  // not started before anyone connected
  const auto seq = mesh.publish("a.b", "waiting");
  RawPeer early(mesh.socket_path());  // connects before jetfan runs, and starts it
  early.send("HELLO builder 1\r\n");
  auto ready = early.next(30s);
  REQUIRE(ready);
  REQUIRE(ready->kind == Frame::Kind::kReady);
  CHECK_THAT(mesh.jetfan_log(), Catch::Contains("using the listening socket systemd passed"));
  const Frame msg = next_msg(early);
  CHECK(msg.delivery.stream_seq == seq);
  early.send("ACK " + std::to_string(msg.delivery.id) + "\r\n");
  REQUIRE(mesh.wait_settled());
  activator.signal(SIGTERM);
  CHECK(activator.wait(30s) == 0);
}

TEST_CASE("socket activation: handlers connecting while jetfan restarts behind the same socket are all served",
          "[integration]") {
  Mesh mesh;
  std::ofstream(mesh.dir() + "/jetfan.yaml") << mesh.config(kBuilder);
  // The test holds the listening socket across restarts, as systemd does for jetfan@.socket.
  UniqueFd listener(::socket(AF_UNIX, SOCK_STREAM, 0));
  const auto address = unix_address(mesh.socket_path());
  REQUIRE(::bind(listener.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
  REQUIRE(::listen(listener.get(), 64) == 0);
  auto start = [&] {
    // LISTEN_PID must be jetfan's own pid: the shell sets it and execs jetfan in its place.
    std::vector<std::string> argv = {"sh", "-c", "LISTEN_PID=$$ LISTEN_FDS=1 exec \"$@\"", "sh"};
    for (const auto& word : mesh.jetfan_command()) argv.push_back(word);
    auto process =
        std::make_unique<Process>(argv, mesh.dir() + "/jetfan.log", "", SpawnExtras{{}, {{listener.get(), 3}}});
    return process;
  };
  auto first = start();
  REQUIRE(mesh.wait_for_log("serving consumer", 20s, 1));
  first->signal(SIGTERM);
  REQUIRE(first->wait(30s) == 0);
  CHECK(::access(mesh.socket_path().c_str(), F_OK) == 0);  // jetfan left systemd's socket file alone

  // No jetfan runs now. Handlers connect anyway: the kernel queues them on the listening socket.
  std::vector<std::unique_ptr<RawPeer>> waiting;
  for (int i = 0; i < 5; ++i) {
    waiting.push_back(std::make_unique<RawPeer>(mesh.socket_path()));
    waiting.back()->send("HELLO builder 1\r\n");
  }
  for (int i = 0; i < 5; ++i) mesh.publish("a.b", "m" + std::to_string(i));
  auto second = start();
  for (auto& peer : waiting) {
    auto ready = peer->next(30s);
    REQUIRE(ready);
    CHECK(ready->kind == Frame::Kind::kReady);
  }
  // All five are instances of builder and share its messages.
  std::size_t received = 0;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (received < 5) {
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    for (auto& peer : waiting) {
      if (auto frame = peer->next(50ms); frame && frame->kind == Frame::Kind::kMsg) {
        peer->send("ACK " + std::to_string(frame->delivery.id) + "\r\n");
        ++received;
      }
    }
  }
  REQUIRE(mesh.wait_settled());
  second->signal(SIGTERM);
  CHECK(second->wait(30s) == 0);
}

TEST_CASE("socket activation: a passed socket that is not socket.path is refused with status 78", "[integration]") {
  Mesh mesh;
  std::ofstream(mesh.dir() + "/jetfan.yaml") << mesh.config(kBuilder);
  std::vector<std::string> argv = {"systemd-socket-activate", "-l", mesh.dir() + "/other.sock"};
  for (const auto& word : mesh.jetfan_command()) argv.push_back(word);
  Process activator(argv, mesh.dir() + "/jetfan.log");
  REQUIRE(wait_until([&] { return can_connect(mesh.dir() + "/other.sock"); }));
  CHECK(activator.wait(30s) == 78);
  CHECK_THAT(mesh.jetfan_log(), Catch::Contains("none is bound to " + mesh.socket_path()));
}

TEST_CASE("exit statuses by class: 69 for a socket another jetfan serves, 75 when JetStream does not answer",
          "[integration]") {
  SECTION("69: the socket is served by another process") {
    Mesh mesh;
    mesh.start_jetfan(mesh.config(kBuilder));
    Process second(mesh.jetfan_command(), mesh.dir() + "/second.log");
    CHECK(second.wait(30s) == 69);
    CHECK_THAT(read_file(mesh.dir() + "/second.log"), Catch::Contains("another process is serving"));
    CHECK(can_connect(mesh.socket_path()));  // the first one still serves
  }
  SECTION("75: a server without JetStream (a temporary failure: systemd tries again later)") {
    Mesh mesh({.jetstream = false});
    auto& jetfan = mesh.start_jetfan(mesh.config(kBuilder), false);
    CHECK(jetfan.wait(30s) == 75);
    CHECK_THAT(mesh.jetfan_log(), Catch::Contains("JetStream does not answer"));
  }
}

TEST_CASE("log.format json writes one JSON object a line", "[integration]") {
  Mesh mesh;
  auto& jetfan = mesh.start_jetfan(
      mesh.config("  - name: builder\n    patterns: [\"#\"]\n    ack_timeout: 200ms\n", "log:\n  format: json\n"));
  auto& handler = mesh.start_handler("builder", {"--default", "nak"});
  mesh.publish("a.b");
  REQUIRE(mesh.wait_for_log("delivery.failed"));
  handler.signal(SIGTERM);
  REQUIRE(mesh.wait_for_log("handler.disconnected"));
  jetfan.signal(SIGTERM);
  REQUIRE(jetfan.wait(30s) == 0);
  std::istringstream lines(mesh.jetfan_log());
  std::map<std::string, nlohmann::json> by_event;  // the first line of each event
  int parsed = 0;
  for (std::string line; std::getline(lines, line);) {
    const auto object = nlohmann::json::parse(line);  // throws, failing the test, if not JSON
    CHECK(object.contains("time"));
    CHECK(object.contains("level"));
    CHECK(object.contains("message"));
    if (object.contains("event")) by_event.emplace(object["event"].get<std::string>(), object);
    ++parsed;
  }
  CHECK(parsed >= 3);
  CHECK_THAT(mesh.jetfan_log(), Catch::Contains("\"message\":\"serving consumer"));
  // The facts of each event are keys of their own, numbers as numbers; the message stays.
  REQUIRE(by_event.count("serving"));
  CHECK(by_event["serving"]["stream"] == "EVENTS");
  CHECK(by_event["serving"]["consumer"] == "node1_builder");
  CHECK(by_event["serving"]["max_held"].is_number_unsigned());
  REQUIRE(by_event.count("nats.connected"));
  CHECK(by_event["nats.connected"]["server"].is_string());
  for (const char* event : {"handler.connected", "delivery.failed", "handler.disconnected"}) {
    INFO(event);
    REQUIRE(by_event.count(event));
    const auto& line = by_event[event];
    CHECK(line["handler"] == "builder");
    CHECK(line["connection"].is_number_unsigned());
    CHECK(line["pid"] == handler.pid());
    CHECK(line["uid"] == ::getuid());
  }
  const auto& failed = by_event["delivery.failed"];
  CHECK(failed["level"] == "warning");
  CHECK(failed["key"] == "a.b");
  CHECK(failed["seq"].is_number_unsigned());
  CHECK(failed["delivery"].is_number_unsigned());
  CHECK(failed["deliveries"] == 1);
  CHECK(failed["reason"].is_string());
  CHECK_THAT(failed["message"].get<std::string>(), Catch::Contains("handler \"builder\""));
  // The dispatcher's own events, from start to stop, carry their facts too.
  REQUIRE(by_event.count("handler.unrestricted"));
  CHECK(by_event["handler.unrestricted"]["handler"] == "builder");
  CHECK(by_event["handler.unrestricted"]["socket"] == mesh.socket_path());
  REQUIRE(by_event.count("draining"));
  CHECK(by_event["draining"]["in_flight"].is_number_unsigned());
  CHECK(by_event["draining"]["drain_timeout_ms"].is_number());
  REQUIRE(by_event.count("stopped"));
  CHECK(by_event["stopped"]["arrived"].get<std::uint64_t>() >= 1);
  CHECK(by_event["stopped"]["nakked"].get<std::uint64_t>() >= 1);
  CHECK(by_event["stopped"]["deliveries"].get<std::uint64_t>() >= 1);
}

TEST_CASE("text log lines say their time zone", "[integration]") {
  Mesh mesh;
  auto& jetfan = mesh.start_jetfan(mesh.config(kBuilder));
  jetfan.signal(SIGTERM);
  REQUIRE(jetfan.wait(30s) == 0);
  // Local time with its UTC offset, as RFC 3339 writes it: 2026-11-29T21:00:57.123+01:00.
  CHECK_THAT(
      mesh.jetfan_log(),
      Catch::Matches("(.|\n)*[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}[+-][0-9]{2}:[0-9]{2} "
                     "info serving consumer(.|\n)*"));
}

TEST_CASE("under journald, log lines carry syslog priorities and no timestamps", "[integration]") {
  Mesh mesh;
  // systemd names the stream it connected to the journal by device and inode; here, the log file.
  std::ofstream(mesh.dir() + "/jetfan.log").flush();
  struct stat info {};
  REQUIRE(::stat((mesh.dir() + "/jetfan.log").c_str(), &info) == 0);
  const std::string journal = "JOURNAL_STREAM=" + std::to_string(info.st_dev) + ":" + std::to_string(info.st_ino);
  auto& jetfan = mesh.start_jetfan(mesh.config("  - name: builder\n    patterns: [\"#\"]\n    ack_timeout: 200ms\n"),
                                   true, {{journal}, {}});
  mesh.start_handler("builder", {"--default", "hang"});
  mesh.publish("a.b");
  REQUIRE(mesh.wait_for_log("failed"));
  jetfan.signal(SIGTERM);
  REQUIRE(jetfan.wait(30s) == 0);
  const std::string log = mesh.jetfan_log();
  CHECK_THAT(log, Catch::Contains("<6>info serving consumer"));
  CHECK_THAT(log, Catch::Contains("<4>warning handler \"builder\""));
  CHECK_THAT(log, !Catch::Matches("(.|\n)*[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:(.|\n)*"));
}

TEST_CASE("every failed delivery is a warning naming handler, stream sequence and cause, and repeats are counted",
          "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(
      mesh.config("  - name: builder\n    patterns: [\"#\"]\n    ack_timeout: 100ms\n"
                  "    max_inflight: 100\n",
                  "delivery:\n  nak_delay: 1m\n"));
  mesh.start_handler("builder", {"--default", "hang"});
  const auto first = mesh.publish("a.b");
  for (int i = 0; i < 29; ++i) mesh.publish("a.b");
  REQUIRE(mesh.wait_seen("builder", 30));
  const std::string timeout = "failed: no ACK, NAK, TERM or WIP within its ack_timeout";
  REQUIRE(mesh.wait_for_log(timeout));
  CHECK_THAT(mesh.jetfan_log(),
             Catch::Contains("handler \"builder\" (connection 1, pid ") &&
                 Catch::Contains("of stream seq " + std::to_string(first) + " (subject \"events.a.b\")"));
  // Thirty timeouts, five lines; the rest are counted once the window passes.
  REQUIRE(mesh.wait_for_log("25 more like the last warning were not logged", 30s));
  CHECK(count_lines_containing(mesh.jetfan_log(), timeout) == 5);
}
