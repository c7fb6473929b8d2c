// Who receives what, and when a message is settled at the server. Each test runs
// a real nats-server, the real jetfan and real handler processes over the real socket, and checks
// both what each handler saw and what the server says about the consumer.

#include <catch2/catch.hpp>

#include <csignal>
#include <set>

#include "control.hpp"
#include "mesh.hpp"
#include "raw_peer.hpp"

using namespace jetfan::testing;
using jetfan::proto::Frame;

namespace {

const std::string kBuilderAndAudit =
    "  - name: builder\n    patterns: [\"mesh-build-machine.built\", \"mesh-controller.built-before\"]\n"
    "  - name: audit\n    patterns: [\"#\"]\n";
const std::string kFastRetry = "delivery:\n  nak_delay: 50ms\n  nak_delay_max: 200ms\n";

std::vector<std::string> keys_of(const std::vector<Seen>& seen) {
  std::vector<std::string> keys;
  for (const auto& s : seen) keys.push_back(s.key);
  return keys;
}

RawPeer hello(const Mesh& mesh, const std::string& name) {
  RawPeer peer(mesh.socket_path());
  peer.send("HELLO " + name + " 1\r\n");
  auto ready = peer.next();
  REQUIRE(ready);
  REQUIRE(ready->kind == Frame::Kind::kReady);
  return peer;
}

}  // namespace

TEST_CASE("each handler receives exactly the messages its patterns match", "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config(kBuilderAndAudit));
  mesh.start_handler("builder");
  mesh.start_handler("audit");
  mesh.publish("mesh-build-machine.built");
  mesh.publish("mesh-controller.built-before");
  mesh.publish("mesh-catalog.upgraded");
  mesh.publish("mesh-build-machine.built-not");
  REQUIRE(mesh.wait_seen("audit", 4));
  REQUIRE(mesh.wait_settled());
  CHECK(keys_of(mesh.seen("builder")) ==
        std::vector<std::string>{"mesh-build-machine.built", "mesh-controller.built-before"});
  CHECK(keys_of(mesh.seen("audit")) == std::vector<std::string>{"mesh-build-machine.built",
                                                                "mesh-controller.built-before", "mesh-catalog.upgraded",
                                                                "mesh-build-machine.built-not"});
}

TEST_CASE("a message is acked only once every recipient has confirmed it", "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(
      mesh.config("  - name: builder\n    patterns: [\"a.*\"]\n"
                  "  - name: audit\n    patterns: [\"a.one\"]\n"));
  RawPeer audit = hello(mesh, "audit");
  mesh.start_handler("builder");
  const auto first = mesh.publish("a.one");  // for builder and audit
  mesh.publish("a.two");                     // for builder only: acked after builder acked a.one
  const Frame to_audit = next_msg(audit);
  CHECK(to_audit.delivery.stream_seq == first);
  REQUIRE(mesh.wait_seen("builder", 2));
  // Builder acked a.one before a.two, and jetfan replies in order on one connection: had it acked
  // a.one on builder's word alone, the server would show it before or with a.two's ack.
  REQUIRE(wait_until([&] { return mesh.state().num_ack_pending <= 1; }));
  const auto waiting = mesh.state();
  CHECK(waiting.num_ack_pending == 1);
  CHECK(waiting.ack_floor_stream_seq == 0);  // a.one, the first, is not acked
  audit.send("ACK " + std::to_string(to_audit.delivery.id) + "\r\n");
  REQUIRE(mesh.wait_settled());
  CHECK(mesh.state().ack_floor_stream_seq == 2);
}

TEST_CASE("a message no declared handler matches is acked and counted", "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config("  - name: builder\n    patterns: [\"a.one\"]\n"));
  mesh.start_handler("builder");
  mesh.publish("zzz.nobody");
  mesh.publish("a.one");
  REQUIRE(mesh.wait_settled());
  CHECK(keys_of(mesh.seen("builder")) == std::vector<std::string>{"a.one"});
  mesh.jetfan().signal(SIGTERM);
  REQUIRE(mesh.jetfan().wait(20s) == 0);
  CHECK_THAT(mesh.jetfan_log(), Catch::Contains("2 acked") && Catch::Contains("1 with no recipient"));
}

TEST_CASE("a recipient with no instance holds its messages, kept alive, until one connects", "[integration]") {
  Mesh mesh({.ack_wait = 1s});
  mesh.start_jetfan(mesh.config(kBuilderAndAudit));
  mesh.start_handler("builder");
  mesh.publish("mesh-build-machine.built");
  REQUIRE(mesh.wait_seen("builder", 1));
  // Keepalives are every AckWait/3; four rounds span more than the server's AckWait.
  REQUIRE(mesh.wait_for_log("kept 1 held message(s) alive", 20s, 4));
  const auto held = mesh.state();
  CHECK(held.num_ack_pending == 1);  // neither acked
  CHECK(held.num_redelivered == 0);  // nor let run out at the server
  CHECK(count_lines_containing(mesh.jetfan_log(), "nak") == 0);
  mesh.start_handler("audit");
  REQUIRE(mesh.wait_seen("audit", 1));
  REQUIRE(mesh.wait_settled());
  CHECK(mesh.seen("audit")[0].deliveries == 1);
  CHECK(mesh.seen("builder").size() == 1);
}

TEST_CASE("instances of one handler share its messages, each message goes to one instance", "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config("  - name: builder\n    patterns: [\"#\"]\n    max_inflight: 2\n"));
  mesh.start_handler("builder", {"--default", "sleep20"});
  mesh.start_handler("builder", {"--default", "sleep20"});
  const int kCount = 40;
  for (int i = 0; i < kCount; ++i) mesh.publish("a.b", "n" + std::to_string(i));
  REQUIRE(mesh.wait_settled());
  const auto one = mesh.seen("builder", 1);
  const auto two = mesh.seen("builder", 2);
  CHECK(one.size() + two.size() == kCount);
  CHECK(one.size() >= 5);  // with two in flight each and slow answers, both take a share
  CHECK(two.size() >= 5);
  std::set<std::uint64_t> sequences;
  for (const auto& s : one) sequences.insert(s.stream_seq);
  for (const auto& s : two) sequences.insert(s.stream_seq);
  CHECK(sequences.size() == kCount);
}

TEST_CASE("a NAK fails the delivery, the redelivery goes only to the recipient that still owes it", "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config(kBuilderAndAudit, kFastRetry));
  mesh.start_handler("builder");
  mesh.start_handler("audit");
  const auto seq = mesh.publish("mesh-build-machine.built", "nak1@builder");
  REQUIRE(mesh.wait_seen("builder", 2));
  REQUIRE(mesh.wait_settled());
  const auto builder = mesh.seen("builder");
  CHECK(builder[0].deliveries == 1);
  CHECK(builder[1].deliveries == 2);
  CHECK(builder[1].stream_seq == seq);
  REQUIRE(mesh.seen("audit").size() == 1);  // audit confirmed it the first time
}

TEST_CASE("no answer within ack_timeout fails the delivery, and it is redelivered", "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(
      mesh.config("  - name: builder\n    patterns: [\"#\"]\n    ack_timeout: 300ms\n"
                  "  - name: audit\n    patterns: [\"#\"]\n",
                  kFastRetry));
  mesh.start_handler("builder");
  mesh.start_handler("audit");
  mesh.publish("a.b", "hang1@builder");
  REQUIRE(mesh.wait_seen("builder", 2));
  REQUIRE(mesh.wait_settled());
  CHECK(mesh.seen("builder")[1].deliveries == 2);
  CHECK(mesh.seen("audit").size() == 1);
}

TEST_CASE("WIP keeps a slow delivery alive past its ack_timeout", "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config("  - name: builder\n    patterns: [\"#\"]\n    ack_timeout: 500ms\n", kFastRetry));
  mesh.start_handler("builder");
  mesh.publish("a.b", "wip1200@builder");  // WIP every 400ms, ack at 1200ms
  REQUIRE(mesh.wait_seen("builder", 1));
  REQUIRE(mesh.wait_settled());
  CHECK(mesh.seen("builder").size() == 1);
}

TEST_CASE("a handler dying with a message unconfirmed fails it, a new instance gets it", "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config(kBuilderAndAudit, kFastRetry));
  auto& doomed = mesh.start_handler("builder");
  mesh.start_handler("audit");
  const auto seq = mesh.publish("mesh-build-machine.built", "die1@builder");
  REQUIRE(doomed.wait(20s) == 3);
  REQUIRE(mesh.wait_for_log("disconnected"));
  mesh.start_handler("builder");
  REQUIRE(mesh.wait_seen("builder", 1, 2));
  REQUIRE(mesh.wait_settled());
  CHECK(mesh.seen("builder", 2)[0].stream_seq == seq);
  CHECK(mesh.seen("builder", 2)[0].deliveries == 2);
  CHECK(mesh.seen("audit").size() == 1);
}

TEST_CASE("TERM from a recipient terminates the message at the server once all have settled", "[integration]") {
  Mesh mesh;
  mesh.controller().watch("$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.EVENTS.node1_builder");
  mesh.start_jetfan(mesh.config(kBuilderAndAudit, kFastRetry));
  mesh.start_handler("builder");
  mesh.start_handler("audit");
  mesh.publish("mesh-build-machine.built", "term@builder");
  REQUIRE(mesh.wait_settled());
  REQUIRE(wait_until([&] { return mesh.controller().watched() == 1; }));
  CHECK(mesh.seen("builder").size() == 1);
  CHECK(mesh.seen("audit").size() == 1);
  CHECK_THAT(mesh.jetfan_log(), Catch::Contains("test says poison"));
}

TEST_CASE("a message whose subject lacks the prefix is terminated at once, and the log names it", "[integration]") {
  Mesh mesh;
  mesh.controller().watch("$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.EVENTS.node1_builder");
  mesh.start_jetfan(mesh.config(kBuilderAndAudit));
  mesh.start_handler("audit");
  const auto seq = mesh.controller().publish("other.thing", "x");
  REQUIRE(mesh.wait_settled());
  REQUIRE(wait_until([&] { return mesh.controller().watched() == 1; }));
  CHECK(mesh.seen("audit").empty());
  CHECK_THAT(mesh.jetfan_log(),
             Catch::Contains("subject \"other.thing\" (stream seq " + std::to_string(seq) + ") has no key"));
}

TEST_CASE("AckPolicy all acks only the highest sequence below which all is settled", "[integration]") {
  Mesh mesh({.ack_policy = "all", .ack_wait = 1500ms});
  mesh.start_jetfan(mesh.config("  - name: builder\n    patterns: [\"#\"]\n"));
  RawPeer builder = hello(mesh, "builder");
  mesh.publish("a.one");
  mesh.publish("a.two");
  const Frame one = next_msg(builder);
  const Frame two = next_msg(builder);
  builder.send("ACK " + std::to_string(two.delivery.id) + "\r\n");
  REQUIRE(builder.sync());
  // Two keepalive rounds after the ACK: an ack sent for a.two would have reached the server.
  const auto rounds = count_lines_containing(mesh.jetfan_log(), "alive at the server");
  REQUIRE(mesh.wait_for_log("alive at the server", 20s, rounds + 2));
  CHECK(mesh.state().num_ack_pending == 2);
  CHECK(mesh.state().num_redelivered == 0);
  builder.send("ACK " + std::to_string(one.delivery.id) + "\r\n");
  REQUIRE(mesh.wait_settled());
  CHECK(mesh.state().ack_floor_stream_seq == 2);
}

// One +ACK settles every lower sequence under AckPolicy all. What the killed jetfan left unacked
// comes back only after AckWait, so the next jetfan must not ack the newer message before then.
TEST_CASE("AckPolicy all: after kill -9, the next jetfan acks nothing newer before what was left unacked came back",
          "[integration]") {
  Mesh mesh({.ack_policy = "all", .ack_wait = 2000ms});
  const std::string config = mesh.config("  - name: builder\n    patterns: [\"#\"]\n");
  mesh.start_jetfan(config);
  std::uint64_t old_seq = 0;
  {
    RawPeer builder = hello(mesh, "builder");
    old_seq = mesh.publish("a.old");
    next_msg(builder);  // delivered, never confirmed
    mesh.jetfan().kill_now();
  }
  const auto new_seq = mesh.publish("a.new");
  mesh.start_jetfan(config);
  RawPeer builder = hello(mesh, "builder");
  std::set<std::uint64_t> seen;
  while (seen.size() < 2) {
    const Frame msg = next_msg(builder, 20s);
    seen.insert(msg.delivery.stream_seq);
    builder.send("ACK " + std::to_string(msg.delivery.id) + "\r\n");
  }
  CHECK(seen == std::set<std::uint64_t>{old_seq, new_seq});
  REQUIRE(mesh.wait_settled());
  CHECK(mesh.state().ack_floor_stream_seq == new_seq);
}

TEST_CASE("AckPolicy none warns at start that delivery is at-most-once, and still delivers", "[integration]") {
  Mesh mesh({.ack_policy = "none"});
  mesh.start_jetfan(mesh.config("  - name: builder\n    patterns: [\"#\"]\n"));
  CHECK_THAT(mesh.jetfan_log(), Catch::Contains("at-most-once"));
  mesh.start_handler("builder");
  mesh.publish("a.b");
  REQUIRE(mesh.wait_seen("builder", 1));
  REQUIRE(mesh.wait_settled());
}

TEST_CASE("jetfan pulls only while fewer than max_held messages are held", "[integration]") {
  Mesh mesh;
  std::string config = mesh.config("  - name: builder\n    patterns: [\"#\"]\n    max_inflight: 100\n");
  config.insert(config.find("key:"), "  max_held: 5\n");
  mesh.start_jetfan(config);
  RawPeer builder = hello(mesh, "builder");
  for (int i = 0; i < 12; ++i) mesh.publish("a.b");
  std::vector<Frame> got;
  for (int i = 0; i < 5; ++i) got.push_back(next_msg(builder));
  // The server's own count of what it delivered: the consumer's delivered sequence. Its ack count
  // lags a +ACK a little (nats-server takes acks off a queue of their own), so both are waited for.
  const auto server_holds = [&](std::uint64_t delivered) {
    return wait_until([&] {
      const auto s = mesh.state();
      return s.delivered_stream_seq == delivered && s.num_ack_pending == 5;
    });
  };
  const auto shown = [&] {
    const auto s = mesh.state();
    return "server: delivered " + std::to_string(s.delivered_stream_seq) + ", ack pending " +
           std::to_string(s.num_ack_pending) + ", pending " + std::to_string(s.num_pending) + "\njetfan's log:\n" +
           mesh.jetfan_log();
  };
  if (!server_holds(5)) FAIL(shown());
  REQUIRE(builder.sync());         // everything jetfan sent before the PONG is kept for next()
  CHECK_FALSE(builder.next(0ms));  // and none of it was a sixth message
  builder.send("ACK " + std::to_string(got[0].delivery.id) + "\r\n");
  next_msg(builder);  // room for one more
  if (!server_holds(6)) FAIL(shown());
  REQUIRE(builder.sync());
  CHECK_FALSE(builder.next(0ms));  // and only one
  // Every request ended as it should: by its batch (2.10 and later say so with 409 Batch Completed).
  CHECK_THAT(mesh.jetfan_log(), !Catch::Contains("answered with status"));
}

TEST_CASE("at most max_inflight deliveries are unconfirmed on one connection", "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config("  - name: builder\n    patterns: [\"#\"]\n    max_inflight: 3\n"));
  RawPeer builder = hello(mesh, "builder");
  for (int i = 0; i < 6; ++i) mesh.publish("a.b");
  std::vector<Frame> got;
  for (int i = 0; i < 3; ++i) got.push_back(next_msg(builder));
  REQUIRE(wait_until([&] { return mesh.state().num_ack_pending == 6; }));  // all held by jetfan
  REQUIRE(builder.sync());                                                 // nothing but the PONG came after the three
  builder.send("ACK " + std::to_string(got[1].delivery.id) + "\r\nACK " + std::to_string(got[2].delivery.id) + "\r\n");
  got.push_back(next_msg(builder));
  got.push_back(next_msg(builder));
  REQUIRE(builder.sync());
  CHECK(got.size() == 5);
}

TEST_CASE("a handler that holds everyone up when jetfan is full is named in a warning", "[integration]") {
  Mesh mesh;
  std::string config =
      mesh.config("  - name: builder\n    patterns: [\"#\"]\n  - name: audit\n    patterns: [\"#\"]\n");
  config.insert(config.find("key:"), "  max_held: 5\n");
  mesh.start_jetfan(config);
  mesh.start_handler("builder");  // audit is declared, never connected
  for (int i = 0; i < 10; ++i) mesh.publish("a.b", "m" + std::to_string(i));
  REQUIRE(mesh.wait_seen("builder", 5));
  REQUIRE(mesh.wait_for_log("handler \"audit\" owes 5 of them (0 in flight)"));
  CHECK_THAT(mesh.jetfan_log(), Catch::Contains("all that max_held (5) allows, and none has settled for 5s") &&
                                    Catch::Contains("with 0 instance(s) connected"));
  CHECK_THAT(control_request(mesh.control_path(), "STATUS"),
             Catch::Contains("PROBLEM: jetfan holds all it may and nothing has settled for") &&
                 Catch::Contains("handler \"audit\" holds everyone up"));
  CHECK(mesh.state().num_pending == 5);  // nothing more was pulled
  mesh.start_handler("audit");
  REQUIRE(mesh.wait_settled());
  CHECK(mesh.seen("builder").size() == 10);
  REQUIRE(mesh.wait_for_log("below max_held (5) and max_held_bytes"));
}

TEST_CASE("a handler that holds everyone up when jetfan is full in bytes is named in a warning", "[integration]") {
  Mesh mesh;
  std::string config =
      mesh.config("  - name: builder\n    patterns: [\"#\"]\n  - name: audit\n    patterns: [\"#\"]\n");
  config.insert(config.find("key:"), "  max_held_bytes: 64KiB\n");
  mesh.start_jetfan(config);
  mesh.start_handler("builder");  // audit is declared, never connected
  const std::string big(20 * 1024, 'x');
  for (int i = 0; i < 8; ++i) mesh.publish("a.b", big);
  REQUIRE(mesh.wait_for_log("all that max_held_bytes (65536) allows, and none has settled for 5s"));
  CHECK_THAT(mesh.jetfan_log(),
             Catch::Contains("handler \"audit\" owes") && Catch::Contains("with 0 instance(s) connected"));
  CHECK(mesh.state().num_pending > 0);  // nothing more was pulled
  mesh.start_handler("audit");
  REQUIRE(mesh.wait_settled());
  CHECK(mesh.seen("builder").size() == 8);
  REQUIRE(mesh.wait_for_log("and max_held_bytes (65536) again: pulling again"));
}

TEST_CASE("with when_full: hand_back a stuck handler's backlog goes back, the others go on, and it gets all later",
          "[integration]") {
  Mesh mesh;
  std::string config = mesh.config(
      "  - name: builder\n    patterns: [\"#\"]\n"
      "  - name: audit\n    patterns: [\"#\"]\n    when_full: hand_back\n",
      "delivery:\n  nak_delay: 100ms\n  nak_delay_max: 10s\n");
  config.insert(config.find("key:"), "  max_held: 10\n");
  mesh.start_jetfan(config);
  mesh.start_handler("builder");
  std::set<std::uint64_t> published;
  for (int i = 0; i < 30; ++i) published.insert(mesh.publish("a.b", "m" + std::to_string(i)));
  // Without the hand-backs builder would stop at 10.
  REQUIRE(mesh.wait_seen("builder", 30, 1, 60s));
  CHECK_THAT(mesh.jetfan_log(), Catch::Contains("handler \"audit\" owed") && Catch::Contains("(when_full: hand_back)"));
  std::set<std::uint64_t> to_builder;
  for (const auto& s : mesh.seen("builder")) to_builder.insert(s.stream_seq);
  CHECK(to_builder == published);  // once each: its confirmations were remembered
  CHECK(mesh.seen("builder").size() == 30);
  mesh.start_handler("audit");
  REQUIRE(mesh.wait_settled(60s));
  std::set<std::uint64_t> to_audit;
  for (const auto& s : mesh.seen("audit")) to_audit.insert(s.stream_seq);
  CHECK(to_audit == published);
}

TEST_CASE("a failed delivery is retried even while another recipient has no instance", "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config(kBuilderAndAudit, kFastRetry));
  mesh.start_handler("audit");  // builder is declared, not connected
  mesh.publish("mesh-build-machine.built", "nak1@audit");
  REQUIRE(mesh.wait_seen("audit", 2));  // the NAK came back without waiting for builder
  CHECK(mesh.seen("audit")[1].deliveries == 2);
  mesh.start_handler("builder");
  REQUIRE(mesh.wait_seen("builder", 1));
  REQUIRE(mesh.wait_settled());
  CHECK(mesh.seen("audit").size() == 2);
}

TEST_CASE("max_held_bytes bounds what is held in bytes, and a message bigger than it still comes, alone",
          "[integration]") {
  Mesh mesh;
  std::string config = mesh.config("  - name: builder\n    patterns: [\"#\"]\n    max_inflight: 1000\n");
  config.insert(config.find("key:"), "  max_held_bytes: 256KiB\n");
  mesh.start_jetfan(config);
  RawPeer builder = hello(mesh, "builder");
  const std::string big(60 * 1024, 'x');
  for (int i = 0; i < 20; ++i) mesh.publish("a.b", big);
  // 256 KiB of budget holds four such messages (each also costs a little bookkeeping); no more
  // is pulled while the handler keeps them.
  std::vector<Frame> got;
  for (int i = 0; i < 3; ++i) got.push_back(next_msg(builder));
  REQUIRE(builder.sync());
  const auto held = mesh.state();
  CHECK(held.num_ack_pending <= 4);
  CHECK(held.num_pending >= 16);
  for (const auto& frame : got) builder.send("ACK " + std::to_string(frame.delivery.id) + "\r\n");
  // And the rest flows as room comes back.
  std::size_t acked = got.size();
  while (acked < 20) {
    const Frame frame = next_msg(builder);
    builder.send("ACK " + std::to_string(frame.delivery.id) + "\r\n");
    ++acked;
  }
  REQUIRE(mesh.wait_settled());

  // A message bigger than the whole budget: pulled on its own once nothing else is held.
  const std::string huge(400 * 1024, 'y');
  mesh.publish("a.b", huge);
  const Frame alone = next_msg(builder);
  CHECK(alone.delivery.payload.size() == huge.size());
  builder.send("ACK " + std::to_string(alone.delivery.id) + "\r\n");
  REQUIRE(mesh.wait_settled());
}
