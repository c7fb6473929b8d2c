// `jetfan dev -- CMD`: a handler author's sandbox (daemon/dev_sandbox.hpp), with the real jetfan,
// a real nats-server and the test handler as CMD, fed lines on its stdin as a person would type them.

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "mesh.hpp"
#include "unique_fd.hpp"

using namespace jetfan::testing;

TEST_CASE(
    "jetfan dev runs CMD as a handler beside its own server and jetfan: each line typed is an event, "
    "and what jetfan says of the handler is shown",
    "[integration]") {
  Mesh mesh({.start_server = false});  // for its temp dir only: jetfan dev brings its own server
  int ends[2];
  REQUIRE(::pipe2(ends, O_CLOEXEC) == 0);
  jetfan::UniqueFd typed(ends[0]), keyboard(ends[1]);
  const std::string seen = mesh.dir() + "/h.seen";
  const char* server = std::getenv("JETFAN_NATS_SERVER");
  // The handler is told where jetfan is by {socket} and {handler} in its words.
  Process dev({JETFAN_BIN, "dev", "--handler", "h", "--pattern", "a.>", "--nats-server",
               server ? server : "nats-server", "--", TEST_HANDLER_BIN, "{socket}", "{handler}", seen},
              mesh.dir() + "/dev.out", "", {{}, {{typed.get(), 0}}});
  typed.reset();
  // a.two is NAK'd with a reason the first time, and ACKed when it comes again.
  const std::string lines = "a.one hello\nb.other not for h\na.two nakwhy1@h\n";
  REQUIRE(::write(keyboard.get(), lines.data(), lines.size()) == static_cast<ssize_t>(lines.size()));
  REQUIRE(wait_until([&] { return read_file(seen).find(" a.two 2 ") != std::string::npos; }, 60s));
  const std::string got = read_file(seen);
  CHECK_THAT(got, Catch::Contains(" a.one 1 hello") && !Catch::Contains("b.other"));
  keyboard.reset();  // end of input: everything stops
  REQUIRE(dev.wait(60s) == 0);
  const std::string out = read_file(mesh.dir() + "/dev.out");
  CHECK_THAT(out, Catch::Contains("published dev.a.one (stream seq 1)") &&
                      Catch::Contains("published dev.b.other (stream seq 2)") &&
                      Catch::Contains("stopping the handler, jetfan (it drains), nats-server"));
  // jetfan's lines about the handler, as they came: its connection, and the NAK with its reason.
  CHECK_THAT(out,
             Catch::Contains("jetfan: info handler \"h\" (connection 1, pid ") && Catch::Contains(") connected\n"));
  CHECK_THAT(out,
             Catch::Contains("jetfan: warning handler \"h\" (connection 1, pid ") &&
                 Catch::Contains("(subject \"dev.a.two\") failed: the handler sent NAK: \"test says try later\"."));
  // Its temp dir is gone with it.
  const auto at = out.find("jetfan serves ");
  REQUIRE(at != std::string::npos);
  const std::string socket = out.substr(at + 14, out.find(' ', at + 14) - at - 14);
  CHECK_FALSE(std::filesystem::exists(std::filesystem::path(socket).parent_path()));
}

TEST_CASE("jetfan dev without a command says so and exits 64", "[integration]") {
  Mesh mesh({.start_server = false});
  std::string output;
  CHECK(run_jetfan({"dev", "--handler", "h"}, mesh.dir(), output) == 64);
  CHECK_THAT(output, Catch::Contains("no command"));
}

TEST_CASE("jetfan dev gives the handler the socket and its name in its environment too", "[integration]") {
  Mesh mesh({.start_server = false});
  int ends[2];
  REQUIRE(::pipe2(ends, O_CLOEXEC) == 0);
  jetfan::UniqueFd typed(ends[0]), keyboard(ends[1]);
  const std::string seen = mesh.dir() + "/h.seen";
  const char* server = std::getenv("JETFAN_NATS_SERVER");
  // Not exec'd: the shell stays, with the handler its child, as npx and friends leave a chain.
  Process dev({JETFAN_BIN, "dev", "--nats-server", server ? server : "nats-server", "--", "sh", "-c",
               "\"$0\" \"$JETFAN_SOCKET\" \"$JETFAN_HANDLER\" \"$1\"; echo the handler ended", TEST_HANDLER_BIN, seen},
              mesh.dir() + "/dev.out", "", {{}, {{typed.get(), 0}}});
  typed.reset();
  const std::string line = "any.key at all\n";  // the default handler "dev" takes every key
  REQUIRE(::write(keyboard.get(), line.data(), line.size()) == static_cast<ssize_t>(line.size()));
  REQUIRE(wait_until([&] { return read_file(seen).find(" any.key 1 at all") != std::string::npos; }, 60s));
  keyboard.reset();
  REQUIRE(dev.wait(60s) == 0);
  // The whole chain stopped with it: no process is left that was given the seen file.
  auto handler_left = [&] {
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
      if (read_file(entry.path().string() + "/cmdline").find(seen) != std::string::npos) return true;
    }
    return false;
  };
  CHECK(wait_until([&] { return !handler_left(); }, 5s));
  CHECK_THAT(read_file(mesh.dir() + "/dev.out"),
             Catch::Contains("jetfan dev: jetfan stopped: 1 messages arrived, 1 acked"));
}

TEST_CASE("jetfan dev without a nats-server says what to install and exits 69, leaving its dir to look at",
          "[integration]") {
  Mesh mesh({.start_server = false});
  std::string output;
  CHECK(run_jetfan({"dev", "--nats-server", mesh.dir() + "/no-such-nats-server", "--", "true"}, mesh.dir(), output) ==
        69);
  CHECK_THAT(output, Catch::Contains("cannot start nats-server") && Catch::Contains("apt install nats-server") &&
                         Catch::Contains("jetfan dev: left "));
  const auto at = output.find("jetfan dev: left ");
  std::filesystem::remove_all(output.substr(at + 17, output.find(' ', at + 17) - at - 17));
}
