// ControlPlane on the real Dispatcher over a FakeUpstream: what the control socket answers, and the
// server's view of the consumer it asks for through the dispatcher. The control socket is real (a
// temporary path); the test runs the io_context itself.

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

#include "control_plane.hpp"
#include "dispatcher.hpp"
#include "fake_upstream.hpp"
#include "timekeeper.hpp"

using namespace jetfan;
using std::chrono::milliseconds;

namespace {

const std::string kInfo =
    R"({"type":"io.nats.jetstream.api.v1.consumer_info_response","stream_name":"STREAM","name":"CONSUMER",)"
    R"("config":{"durable_name":"CONSUMER","ack_policy":"explicit","ack_wait":30000000000,"max_deliver":-1,)"
    R"("max_ack_pending":1000},"delivered":{"consumer_seq":9,"stream_seq":12},"ack_floor":{"consumer_seq":7,)"
    R"("stream_seq":10},"num_ack_pending":2,"num_redelivered":1,"num_waiting":3,"num_pending":40})";

Config config(const std::string& dir) {
  Config c;
  c.file = "test.yaml";
  c.consumer.stream = "STREAM";
  c.consumer.durable = "CONSUMER";
  c.consumer.max_held = 64;
  c.key.strip_prefix = "ev.";
  c.socket.path = dir + "/handlers.sock";  // never bound here
  c.control.path = dir + "/control.ctl";
  HandlerSettings h;
  h.name = "builder";
  h.patterns = {"a.>"};
  h.max_inflight = 8;
  h.ack_timeout = milliseconds(30000);
  c.handlers = {h};
  return c;
}

class Plane {
 public:
  Plane()
      : dir_(make_dir()),
        config_(config(dir_)),
        settings_(*derive_serve_settings(config_, fake_consumer_facts()).settings),
        control_(std::in_place, io_, config_, [] { return ReloadResult{}; }) {}
  ~Plane() {
    control_.reset();
    dispatcher_.reset();
    std::filesystem::remove_all(dir_);
  }

  void serve() {
    dispatcher_.emplace(config_, settings_, upstream, time, notifier_, arena_, DispatcherHooks{[] {}, [] {}});
    dispatcher_->start();
    control_->attach(*dispatcher_, "cnats-test-version");
  }

  // Sends one command line and returns the connection, to read the reply with reply().
  int send(const std::string& line) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof address.sun_path, "%s", config_.control.path.c_str());
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    const std::string bytes = line + "\n";
    REQUIRE(::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
    pump();
    return fd;
  }
  // Runs the io_context until the reply on `fd` is whole (jetfan closed it), and returns it.
  std::string reply(int fd) {
    std::string out;
    for (int turns = 0; turns < 10000; ++turns) {
      pump();
      char buffer[4096];
      const ssize_t got = ::recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
      if (got == 0) break;
      if (got > 0) out.append(buffer, static_cast<std::size_t>(got));
    }
    ::close(fd);
    return out;
  }
  void pump() {
    io_.restart();
    io_.poll();
  }

  MessageBytesArena arena_;
  FakeUpstream upstream{arena_, "ev."};
  ManualTimekeeper time{TimePoint{} + std::chrono::hours(1)};

 private:
  static std::string make_dir() {
    char name[] = "/tmp/control-plane-test.XXXXXX";
    REQUIRE(::mkdtemp(name) != nullptr);
    return name;
  }

  std::string dir_;
  boost::asio::io_context io_;
  boost::asio::io_context notifier_io_;
  SystemdNotifier notifier_{notifier_io_};
  Config config_;
  ServeSettings settings_;
  std::optional<Dispatcher> dispatcher_;
  std::optional<ControlPlane> control_;
};

}  // namespace

TEST_CASE("before jetfan serves, status says it is starting and not bound", "[unit]") {
  Plane plane;
  const auto doc = nlohmann::json::parse(plane.reply(plane.send("STATUS JSON")));
  CHECK(doc["state"] == "starting");
  CHECK(doc["ready"] == false);
  CHECK(doc["consumer"]["server"].is_null());
  CHECK(doc["consumer"]["server_error"] == "not bound to the consumer yet");
}

TEST_CASE("status asks the server through the dispatcher and shows its answer", "[unit]") {
  Plane plane;
  plane.serve();
  plane.upstream.consumer_info_requests.clear();  // the first poll
  const int fd = plane.send("STATUS JSON");
  REQUIRE(plane.upstream.consumer_info_requests.size() == 1);
  CHECK(plane.upstream.consumer_info_requests[0].subject == "$JS.API.CONSUMER.INFO.STREAM.CONSUMER");
  plane.upstream.api_answer(plane.upstream.consumer_info_requests[0].id, kInfo);
  const auto doc = nlohmann::json::parse(plane.reply(fd));
  CHECK(doc["state"] == "serving");
  CHECK(doc["consumer"]["server"]["num_waiting"] == 3);
  CHECK(doc["consumer"]["server"]["delivered_stream_seq"] == 12);
  CHECK(doc["consumer"]["server_error"].is_null());
}

TEST_CASE("status shows the server's refusal, and no server view", "[unit]") {
  Plane plane;
  plane.serve();
  plane.upstream.consumer_info_requests.clear();
  const int fd = plane.send("STATUS JSON");
  REQUIRE(plane.upstream.consumer_info_requests.size() == 1);
  plane.upstream.api_answer(plane.upstream.consumer_info_requests[0].id,
                            R"({"error":{"code":404,"err_code":10014,"description":"consumer not found"}})");
  const auto doc = nlohmann::json::parse(plane.reply(fd));
  CHECK(doc["consumer"]["server"].is_null());
  CHECK(doc["consumer"]["server_error"] == "the server says: consumer not found (404)");
}

TEST_CASE("the metrics show the last polled view of the consumer", "[unit]") {
  Plane plane;
  plane.serve();
  REQUIRE_FALSE(plane.upstream.consumer_info_requests.empty());
  plane.upstream.api_answer(plane.upstream.consumer_info_requests.back().id, kInfo);
  const std::string metrics = plane.reply(plane.send("METRICS"));
  CHECK_THAT(metrics, Catch::Contains("jetfan_consumer_num_pending 40"));
  CHECK_THAT(metrics, Catch::Contains("cnats-test-version"));
}

TEST_CASE("without a connection, status says so at once", "[unit]") {
  Plane plane;
  plane.serve();
  plane.upstream.close(Duration(0));
  const auto doc = nlohmann::json::parse(plane.reply(plane.send("STATUS JSON")));
  CHECK(doc["consumer"]["server_error"] == "not connected to the server");
}
