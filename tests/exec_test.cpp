// jetfan exec (exec/exec_handler.hpp) with real commands, against the real jetfan and a real
// nats-server: each outcome, the environment and stdin, output, timeouts, WIP, concurrency, stop.

#include <catch2/catch.hpp>

#include <signal.h>

#include <filesystem>
#include <fstream>

#include "mesh.hpp"

using namespace jetfan::testing;

namespace {

const std::string kFastRetry = "delivery:\n  nak_delay: 50ms\n  nak_delay_max: 200ms\n";

std::string builder(const std::string& extra = "") { return "  - name: builder\n    patterns: [\"#\"]\n" + extra; }

// jetfan exec as its own process; its stdout and stderr go to <dir>/exec.out and exec.err.
struct Exec {
  Mesh& mesh;
  Process process;
  Exec(Mesh& m, std::vector<std::string> flags, std::vector<std::string> command)
      : mesh(m), process(argv(m, std::move(flags), std::move(command)), m.dir() + "/exec.out", m.dir() + "/exec.err") {}
  static std::vector<std::string> argv(Mesh& m, std::vector<std::string> flags, std::vector<std::string> command) {
    std::vector<std::string> all = {JETFAN_EXEC_BIN, "--handler", "builder"};
    if (std::find(flags.begin(), flags.end(), "--config") == flags.end()) {
      all.insert(all.end(), {"--socket", m.socket_path()});
    }
    all.insert(all.end(), flags.begin(), flags.end());
    all.push_back("--");
    all.insert(all.end(), command.begin(), command.end());
    return all;
  }
  std::string out() const { return read_file(mesh.dir() + "/exec.out"); }
  std::string err() const { return read_file(mesh.dir() + "/exec.err"); }
  bool wait_err(const std::string& part, std::size_t count = 1) const {
    return wait_until([&] { return count_lines_containing(err(), part) >= count; });
  }
};

Exec start_exec(Mesh& mesh, std::vector<std::string> flags, std::vector<std::string> command) {
  Exec exec(mesh, std::move(flags), std::move(command));
  if (!exec.wait_err("connected to")) FAIL("jetfan exec did not connect:\n" << exec.err());
  return exec;
}

std::vector<std::string> sh(const std::string& script) { return {"sh", "-c", script}; }

bool alive(const std::string& pid) {
  // A process killed with its parent may linger as a zombie until init reaps it: that is dead.
  const std::string stat = read_file("/proc/" + pid + "/stat");
  return !stat.empty() && stat.find(") Z") == std::string::npos;
}

}  // namespace

TEST_CASE(
    "exec: exit 0 ACKs, payload on stdin, delivery and its subject and time in JETFAN_*, output lines prefixed with "
    "the seq",
    "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config(builder()));
  const std::string dir = mesh.dir();
  auto exec = start_exec(mesh, {},
                         sh("cat > " + dir +
                            "/payload; printf '%s|' \"$JETFAN_HANDLER\" \"$JETFAN_KEY\" "
                            "\"$JETFAN_SEQ\" \"$JETFAN_DELIVERIES\" \"$JETFAN_HEADERS\" \"$JETFAN_HEADER_TRACE_ID\" "
                            "\"$JETFAN_HEADER_X_N\" \"$JETFAN_SUBJECT\" "
                            // Split where "??-" would read as a trigraph (-Wtrigraphs).
                            "\"$(case $JETFAN_PUBLISHED in 2???"
                            "-??"
                            "-??T??:??:??.?????????Z) echo rfc3339 ;; esac)\" > " +
                            dir + "/env; echo \"out $JETFAN_KEY\"; echo \"err $JETFAN_KEY\" >&2"));
  const auto seq =
      mesh.controller().publish("events.a.b", "line one\nline two", {{"Trace-Id", "abc"}, {"X-N", "1"}, {"X-N", "2"}});
  REQUIRE(mesh.wait_settled());
  REQUIRE(exec.wait_err("; ACK"));
  CHECK(read_file(dir + "/payload") == "line one\nline two");
  CHECK(read_file(dir + "/env") ==
        "builder|a.b|" + std::to_string(seq) + "|1|Trace-Id: abc\nX-N: 1\nX-N: 2\n|abc|1\n2|events.a.b|rfc3339|");
  CHECK_THAT(exec.out(), Catch::Contains("[seq " + std::to_string(seq) + "] out a.b\n"));
  CHECK_THAT(exec.err(), Catch::Contains("[seq " + std::to_string(seq) + "] err a.b\n"));
  CHECK_THAT(exec.err(), Catch::Contains("seq " + std::to_string(seq) + " (key a.b, delivery 1): exited 0 after"));
}

TEST_CASE("exec: exit 100 TERMs with the last line of stderr as the reason", "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config(builder()));
  auto exec = start_exec(mesh, {}, sh("echo first >&2; echo \"cannot parse $JETFAN_KEY\" >&2; echo; exit 100"));
  mesh.publish("a.b", "x");
  REQUIRE(mesh.wait_settled());
  REQUIRE(mesh.wait_for_log("as poison: cannot parse a.b"));
  CHECK(mesh.state().num_redelivered == 0);
  CHECK_THAT(exec.err(), Catch::Contains("exited 100") && Catch::Contains("TERM: cannot parse a.b"));
}

TEST_CASE("exec: any other exit, or death by a signal, NAKs", "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config(builder(), kFastRetry));
  // Fails on the first delivery; the redelivery succeeds.
  auto exec = start_exec(
      mesh, {}, sh("[ \"$JETFAN_DELIVERIES\" -ge 2 ] && exit 0; [ \"$JETFAN_KEY\" = sig ] && kill -9 $$; exit 3"));
  mesh.publish("status", "x");
  mesh.publish("sig", "x");
  REQUIRE(mesh.wait_settled());
  REQUIRE(exec.wait_err("; ACK", 2));
  const auto err = exec.err();
  CHECK_THAT(err, Catch::Contains("(key status, delivery 1): exited 3 after") &&
                      Catch::Contains("(key sig, delivery 1): killed by signal 9"));
  CHECK(count_lines_containing(err, "; NAK") == 2);
  CHECK_THAT(
      err, Catch::Contains("(key status, delivery 2): exited 0") && Catch::Contains("(key sig, delivery 2): exited 0"));
}

TEST_CASE("exec: a command past --timeout is killed with its whole process group, grandchildren too, and NAK'd",
          "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config(builder(), kFastRetry));
  const std::string dir = mesh.dir();
  // The first delivery: a command and a grandchild that both ignore SIGTERM, so SIGKILL is needed.
  auto exec = start_exec(mesh, {"--timeout=300ms"},
                         sh("[ \"$JETFAN_DELIVERIES\" -ge 2 ] && exit 0; trap '' TERM; "
                            "sh -c 'trap \"\" TERM; echo $$ > " +
                            dir +
                            "/grandchild.pid; "
                            "i=0; while [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done' & "
                            "echo $$ > " +
                            dir + "/child.pid; wait; wait"));
  mesh.publish("a.b", "x");
  REQUIRE(exec.wait_err("still running at --timeout 300ms: killed its process group; NAK"));
  REQUIRE(mesh.wait_settled());
  CHECK_THAT(exec.err(), Catch::Contains("(key a.b, delivery 2): exited 0"));
  const auto child = read_file(dir + "/child.pid"), grandchild = read_file(dir + "/grandchild.pid");
  REQUIRE(!child.empty());
  REQUIRE(!grandchild.empty());
  CHECK(wait_until([&] {
    return !alive(child.substr(0, child.size() - 1)) && !alive(grandchild.substr(0, grandchild.size() - 1));
  }));
}

TEST_CASE("exec: WIP keeps a command that runs past ack_timeout alive (ack_timeout read from --config)",
          "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config(builder("    ack_timeout: 300ms\n"), kFastRetry));
  auto exec = start_exec(mesh, {"--config", mesh.dir() + "/jetfan.yaml"}, {"sleep", "1"});
  mesh.publish("a.b", "x");
  REQUIRE(mesh.wait_settled());
  REQUIRE(exec.wait_err("; ACK"));
  CHECK(mesh.state().num_redelivered == 0);
  CHECK(count_lines_containing(exec.err(), "seq 1 (key a.b, delivery 1): exited 0") == 1);
  CHECK(count_lines_containing(exec.err(), "delivery 2") == 0);
}

TEST_CASE("exec: --concurrency N runs N commands at once", "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config(builder()));
  const std::string dir = mesh.dir();
  // Each command waits (20 s at most) for the test to let it go.
  auto exec = start_exec(mesh, {"--concurrency=3"},
                         sh("touch " + dir +
                            "/started.$JETFAN_SEQ; i=0; "
                            "while [ ! -e " +
                            dir + "/go ] && [ $i -lt 1000 ]; do sleep 0.02; i=$((i+1)); done"));
  for (int i = 0; i < 4; ++i) mesh.publish("a.b", "x");
  auto started = [&] {
    int n = 0;
    for (int seq = 1; seq <= 4; ++seq) n += std::filesystem::exists(dir + "/started." + std::to_string(seq));
    return n;
  };
  CHECK(wait_until([&] { return started() == 3; }));
  CHECK(started() == 3);               // the fourth waits for a free slot
  std::ofstream(dir + "/go").close();  // the commands wait for this file
  REQUIRE(mesh.wait_settled());
  CHECK(started() == 4);
}

TEST_CASE("exec: SIGTERM lets running commands finish and confirms them, then exits 0", "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config(builder()));
  const std::string dir = mesh.dir();
  auto exec = start_exec(mesh, {},
                         sh("touch " + dir +
                            "/started; i=0; "
                            "while [ ! -e " +
                            dir + "/go ] && [ $i -lt 1000 ]; do sleep 0.02; i=$((i+1)); done"));
  mesh.publish("a.b", "x");
  REQUIRE(wait_until([&] { return std::filesystem::exists(dir + "/started"); }));
  exec.process.signal(SIGTERM);
  REQUIRE(exec.wait_err("taking no new messages"));
  std::ofstream(dir + "/go").close();
  CHECK(exec.process.wait(20s) == 0);
  CHECK_THAT(exec.err(), Catch::Contains("exited 0") && Catch::Contains("; ACK") && Catch::Contains("stopped"));
  CHECK(mesh.wait_settled());
}

TEST_CASE("exec: a bad command line, a missing or unrunnable command, an undeclared handler", "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config(builder()));
  const std::string dir = mesh.dir();
  auto run = [&](std::vector<std::string> argv) {
    argv.insert(argv.begin(), JETFAN_EXEC_BIN);
    Process p(argv, dir + "/bad.out");
    return p.wait(20s);
  };
  CHECK(run({"--socket", mesh.socket_path(), "--", "true"}) == 64);
  // As a shell does: 127 for a command that is nowhere, 126 for one that is there but cannot be run.
  CHECK(run({"--handler", "builder", "--socket", mesh.socket_path(), "--", "no-such-command-here"}) == 127);
  CHECK(run({"--handler", "builder", "--socket", mesh.socket_path(), "--", dir + "/jetfan.yaml"}) == 126);
  CHECK(run({"--handler", "builder", "--socket", mesh.socket_path(), "--", dir}) == 126);
  CHECK(run({"--handler", "builder", "--no-such-flag", "--socket", mesh.socket_path(), "--", "true"}) == 64);
  CHECK(run({"--handler", "nobody", "--socket", mesh.socket_path(), "--", "true"}) == 76);
  CHECK(run({"--handler", "nobody", "--config", dir + "/jetfan.yaml", "--", "true"}) == 78);
  const auto out = read_file(dir + "/bad.out");
  CHECK_THAT(out,
             Catch::Contains("--handler NAME is required") && Catch::Contains("no such executable file in $PATH") &&
                 Catch::Contains("jetfan.yaml is not executable") && Catch::Contains(" is a directory") &&
                 Catch::Contains("unexpected argument \"--no-such-flag\"") &&
                 Catch::Contains("unknown handler \"nobody\"") && Catch::Contains("declares no handler \"nobody\""));
  // A usage error is its line and where the help is, not the whole help.
  CHECK_THAT(out, Catch::Contains("jetfan exec --help says how to use it.") && !Catch::Contains("usage: jetfan exec"));
}

TEST_CASE("exec: each line on $JETFAN_PUBLISH_FD is published, tied to the message as its index, then it is ACKed",
          "[integration]") {
  Mesh mesh;
  mesh.controller().create_stream("OUT", {"out.>"});
  mesh.start_jetfan(mesh.config(builder("    publish:\n      subjects: [\"out.>\"]\n")));
  auto exec = start_exec(mesh, {},
                         sh("echo \"out.x hello\" >&$JETFAN_PUBLISH_FD; echo log line; "
                            "printf 'out.y second  one' >&$JETFAN_PUBLISH_FD"));
  const auto seq = mesh.publish("a.b", "in");
  REQUIRE(mesh.wait_settled());
  REQUIRE(exec.wait_err("; ACK"));
  CHECK_THAT(exec.err(), Catch::Contains("exited 0 after") && Catch::Contains("; 2 published; ACK"));
  CHECK_THAT(exec.out(), Catch::Contains("log line"));
  REQUIRE(mesh.controller().stream_messages("OUT") == 2);
  const auto first = mesh.controller().get_message("OUT", 1), second = mesh.controller().get_message("OUT", 2);
  CHECK((first.subject == "out.x" && first.payload == "hello"));
  CHECK((second.subject == "out.y" && second.payload == "second  one"));  // a last line without "\n" too
  const std::string msg_id = "jetfan:EVENTS:node1_builder:" + std::to_string(seq) + ":builder:";
  auto id_of = [](const auto& message) {
    for (const auto& [name, value] : message.headers) {
      if (name == "Nats-Msg-Id") return value;
    }
    return std::string();
  };
  CHECK(id_of(first) == msg_id + "0");
  CHECK(id_of(second) == msg_id + "1");
}

TEST_CASE("exec: a line that is not a publish NAKs the message, and so does a publish jetfan refuses, logged with it",
          "[integration]") {
  Mesh mesh;
  mesh.controller().create_stream("OUT", {"out.>"});
  mesh.start_jetfan(mesh.config(builder("    publish:\n      subjects: [\"out.>\"]\n"), kFastRetry));
  // The first delivery writes a line without a subject, the second one a subject it may not publish
  // to, the third does it right.
  auto exec =
      start_exec(mesh, {},
                 sh("case $JETFAN_DELIVERIES in "
                    "1) echo ' no subject' >&$JETFAN_PUBLISH_FD; echo 'out.never after it' >&$JETFAN_PUBLISH_FD ;; "
                    "2) echo 'elsewhere.x hi' >&$JETFAN_PUBLISH_FD ;; "
                    "*) echo 'out.x at last' >&$JETFAN_PUBLISH_FD ;; esac"));
  mesh.publish("a.b", "in");
  REQUIRE(mesh.wait_settled());
  REQUIRE(exec.wait_err("; ACK"));
  const auto err = exec.err();
  CHECK_THAT(err, Catch::Contains("[seq 1] publish line 1 starts with a space, not with a subject: \" no subject\"; "
                                  "nothing after it is published, and the message is NAK'd"));
  CHECK_THAT(err, Catch::Contains("(key a.b, delivery 1): exited 0 after") &&
                      Catch::Contains("; NAK: publish line 1 starts with a space"));
  CHECK_THAT(err, Catch::Contains("[seq 1] publish line 1 to elsewhere.x failed: not-allowed handler \"builder\" may "
                                  "not publish to \"elsewhere.x\""));
  CHECK_THAT(err, Catch::Contains("(key a.b, delivery 2): exited 0") &&
                      Catch::Contains("; NAK: publish line 1 to elsewhere.x failed: not-allowed"));
  CHECK_THAT(err, Catch::Contains("(key a.b, delivery 3): exited 0") && Catch::Contains("; 1 published; ACK"));
  REQUIRE(mesh.controller().stream_messages("OUT") == 1);
  CHECK(mesh.controller().get_message("OUT", 1).payload == "at last");
}
