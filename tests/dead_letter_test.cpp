// Integration tests: a per-handler retry budget and dead letters, against a real nats-server with
// a dead-letter stream made as a controller would make it.

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "mesh.hpp"

using namespace jetfan::testing;

namespace {

// builder NAKs what asks it to, for ever, with a budget of 3 and dead letters; audit takes all.
std::string budget_handlers(const std::string& dead_letter_subject = "dlq.node1_builder.builder") {
  return "  - name: builder\n    patterns: [\"a.*\"]\n"
         "    retry: {max_attempts: 3, backoff: 10ms, backoff_max: 40ms}\n"
         "    dead_letter: {subject: " +
         dead_letter_subject +
         "}\n"
         "  - name: audit\n    patterns: [\"#\"]\n";
}

std::string header(const jetfan::example::MeshController::StoredMessage& m, const std::string& name) {
  for (const auto& [key, value] : m.headers) {
    if (key == name) return value;
  }
  return "(none)";
}

std::size_t count_seq(const std::vector<Seen>& seen, std::uint64_t seq) {
  return static_cast<std::size_t>(
      std::count_if(seen.begin(), seen.end(), [&](const Seen& s) { return s.stream_seq == seq; }));
}

// budget_handlers() running with a DLQ stream, one message published with `payload` (its
// directives say what each handler answers); returns its stream seq once its one dead letter is
// stored and everything has settled.
std::uint64_t dead_letter_one(Mesh& mesh, const std::string& payload) {
  mesh.controller().create_stream("DLQ", {"dlq.>"});
  mesh.start_jetfan(mesh.config(budget_handlers()));
  mesh.start_handler("builder");  // the C++ client: protocol version 3
  mesh.start_handler("audit");
  const std::uint64_t seq = mesh.publish("a.two", payload);
  REQUIRE(wait_until([&] { return mesh.controller().stream_messages("DLQ") == 1; }));
  REQUIRE(mesh.wait_settled());
  return seq;
}

}  // namespace

TEST_CASE("a handler that fails a message for ever gets max_attempts deliveries, then one dead letter",
          "[integration]") {
  Mesh mesh;
  mesh.controller().create_stream("DLQ", {"dlq.>"});
  mesh.start_jetfan(mesh.config(budget_handlers()));
  mesh.start_handler("builder");
  mesh.start_handler("audit");
  // Bytes a text path would mangle, and headers of the publisher's own.
  const std::string payload = std::string("\x01\x02\xfe\xff\x00 nak@builder\t\x7f end", 24);
  const std::uint64_t seq =
      mesh.controller().publish("events.a.one", payload, {{"Trace-Id", "abc-123"}, {"X-Two", "two: words"}});
  REQUIRE(wait_until([&] { return mesh.controller().stream_messages("DLQ") == 1; }));
  REQUIRE(mesh.wait_settled());
  CHECK(count_seq(mesh.seen("builder"), seq) == 3);
  CHECK(count_seq(mesh.seen("audit"), seq) == 1);

  const auto dead = mesh.controller().get_message("DLQ", 1);
  CHECK(dead.subject == "dlq.node1_builder.builder");
  CHECK(dead.payload == payload);
  CHECK(header(dead, "Trace-Id") == "abc-123");
  CHECK(header(dead, "X-Two") == "two: words");
  CHECK(header(dead, "Jetfan-Handler") == "builder");
  CHECK(header(dead, "Jetfan-Reason") == "max_attempts 3 used up; last: nak");
  CHECK(header(dead, "Jetfan-Attempts") == "3");
  CHECK(header(dead, "Jetfan-Subject") == "events.a.one");
  CHECK(header(dead, "Jetfan-Stream") == "EVENTS");
  CHECK(header(dead, "Jetfan-Sequence") == std::to_string(seq));
  CHECK(header(dead, "Jetfan-Consumer") == "node1_builder");
  CHECK(header(dead, "Jetfan-Deliveries") == "3");
  CHECK(header(dead, "Jetfan-Time").size() == std::string("2026-01-01T00:00:00.000000000Z").size());
  CHECK(mesh.controller().stream_messages("DLQ") == 1);  // exactly one
  CHECK(mesh.state().ack_floor_stream_seq == seq);
}

// Every value a stored message has for a header, in the order cnats gives them.
std::vector<std::string> values(const jetfan::example::MeshController::StoredMessage& m, const std::string& name) {
  std::vector<std::string> out;
  for (const auto& [key, value] : m.headers) {
    if (key == name) out.push_back(value);
  }
  return out;
}

TEST_CASE("two handlers that give up one message with its own Nats-Msg-Id each get their dead letter in one stream",
          "[integration]") {
  // Both NAK it for ever. Had the dead letters carried only the message's Nats-Msg-Id, the stream's
  // duplicate window would have taken the second for a copy of the first, and dropped it.
  Mesh mesh;
  mesh.controller().create_stream("DLQ", {"dlq.>"});
  mesh.start_jetfan(
      mesh.config("  - name: builder\n    patterns: [\"a.*\"]\n"
                  "    retry: {max_attempts: 2, backoff: 10ms}\n"
                  "    dead_letter: {subject: dlq.x.builder}\n"
                  "  - name: checker\n    patterns: [\"a.*\"]\n"
                  "    retry: {max_attempts: 2, backoff: 10ms}\n"
                  "    dead_letter: {subject: dlq.x.checker}\n"));
  mesh.start_handler("builder");
  mesh.start_handler("checker");
  const std::uint64_t seq =
      mesh.controller().publish("events.a.one", "nak@builder nak@checker", {{"Nats-Msg-Id", "order-1"}});
  REQUIRE(wait_until([&] { return mesh.controller().stream_messages("DLQ") == 2; }));
  REQUIRE(mesh.wait_settled());
  std::set<std::string> handlers;
  for (std::uint64_t dead_seq : {1, 2}) {
    const auto dead = mesh.controller().get_message("DLQ", dead_seq);
    const std::string handler = header(dead, "Jetfan-Handler");
    handlers.insert(handler);
    INFO("dead letter " << dead_seq << " of handler " << handler);
    const auto ids = values(dead, "Nats-Msg-Id");
    CHECK(std::count(ids.begin(), ids.end(), "jetfan:EVENTS:node1_builder:" + std::to_string(seq) + ":" + handler) ==
          1);
    CHECK(std::count(ids.begin(), ids.end(), "order-1") == 1);  // the message's own stays
  }
  CHECK(handlers == std::set<std::string>{"builder", "checker"});
}

TEST_CASE("a message the next jetfan gives up again after kill -9 is stored once in the dead-letter stream",
          "[integration]") {
  // audit is declared but has no instance, so the message stays unacked after builder's dead letter
  // is stored; the killed jetfan's successor gets it again after AckWait, builder uses up a new
  // budget, and the second publish is the same dead letter (its Nats-Msg-Id): the stream answers
  // with the sequence of the first and stores nothing new.
  Mesh mesh({.ack_wait = std::chrono::milliseconds(2000)});
  mesh.controller().create_stream("DLQ", {"dlq.>"});
  const std::string config = mesh.config(budget_handlers());
  mesh.start_jetfan(config);
  mesh.start_handler("builder");
  const std::uint64_t seq = mesh.publish("a.four", "nak@builder");
  REQUIRE(mesh.wait_for_log("stored in stream \"DLQ\" at seq 1"));
  mesh.jetfan().kill_now();

  mesh.start_jetfan(config);
  mesh.start_handler("builder");
  REQUIRE(mesh.wait_for_log("stored in stream \"DLQ\" at seq 1", 30s, 2));
  CHECK(count_seq(mesh.seen("builder", 2), seq) == 3);  // a whole new budget
  CHECK(mesh.controller().stream_messages("DLQ") == 1);
  mesh.start_handler("audit");
  REQUIRE(mesh.wait_settled());
  CHECK(mesh.controller().stream_messages("DLQ") == 1);
}

TEST_CASE("a TERM from a handler with dead letters is dead-lettered with the reason TERM and the handler's words",
          "[integration]") {
  Mesh mesh;
  const std::uint64_t seq = dead_letter_one(mesh, "term@builder");
  const auto dead = mesh.controller().get_message("DLQ", 1);
  CHECK(header(dead, "Jetfan-Reason") == "TERM: test says poison");
  CHECK(header(dead, "Jetfan-Sequence") == std::to_string(seq));
  // And so `jetfan dlq list` says why.
  std::string listed;
  CHECK(run_jetfan({"dlq", "list", "--handler", "builder", "--control", mesh.control_path()}, mesh.dir(), listed) == 0);
  CHECK_THAT(listed, Catch::Contains("reason TERM: test says poison"));
  CHECK(count_seq(mesh.seen("builder"), seq) == 1);
}

TEST_CASE("a NAK's reason, when it was the handler's last word, is in the dead letter, dlq list and dlq list --json",
          "[integration]") {
  Mesh mesh;
  const std::uint64_t seq = dead_letter_one(mesh, "nakwhy@builder");
  const auto dead = mesh.controller().get_message("DLQ", 1);
  CHECK(header(dead, "Jetfan-Reason") == "max_attempts 3 used up; last: nak: test says try later");
  CHECK(header(dead, "Jetfan-Sequence") == std::to_string(seq));
  std::string listed;
  CHECK(run_jetfan({"dlq", "list", "--handler", "builder", "--control", mesh.control_path()}, mesh.dir(), listed) == 0);
  CHECK_THAT(listed, Catch::Contains("reason max_attempts 3 used up; last: nak: test says try later"));
  std::string json;
  CHECK(run_jetfan({"dlq", "list", "--json", "--handler", "builder", "--control", mesh.control_path()}, mesh.dir(),
                   json) == 0);
  CHECK_THAT(json, Catch::Contains("\"reason\":\"max_attempts 3 used up; last: nak: test says try later\""));
  CHECK(count_seq(mesh.seen("builder"), seq) == 3);
}

TEST_CASE("a dead_letter subject that no stream captures stops jetfan with status 78, naming handler and subject",
          "[integration]") {
  Mesh mesh;
  auto& jetfan = mesh.start_jetfan(mesh.config(budget_handlers("nowhere.builder")), false);
  REQUIRE(jetfan.wait(20s) == 78);
  const std::string log = mesh.jetfan_log();
  CHECK(log.find("no stream captures \"nowhere.builder\"") != std::string::npos);
  CHECK(log.find("handler builder") != std::string::npos);
}

TEST_CASE("a full dead-letter stream holds the message and loses nothing, then takes it once there is room",
          "[integration]") {
  Mesh mesh;
  mesh.controller().create_stream("DLQ", {"dlq.>"}, 1);
  mesh.controller().publish("dlq.filler", "taking the only room");
  mesh.start_jetfan(mesh.config(budget_handlers()));
  mesh.start_handler("builder");
  mesh.start_handler("audit");
  const std::uint64_t seq = mesh.publish("a.three", "nak@builder");
  // The budget is used up and the publish refused: held, tried again, never acked meanwhile.
  REQUIRE(mesh.wait_for_log("was not stored", 20s, 2));
  CHECK(mesh.state().ack_floor_stream_seq < seq);
  CHECK(mesh.state().num_ack_pending == 1);
  CHECK(count_seq(mesh.seen("builder"), seq) == 3);
  CHECK(count_seq(mesh.seen("audit"), seq) == 1);
  // Room is made: the next try is stored, and the message settles.
  mesh.controller().delete_message("DLQ", 1);
  REQUIRE(wait_until([&] { return mesh.controller().stream_messages("DLQ") == 1; }));
  REQUIRE(mesh.wait_settled());
  const auto dead = mesh.controller().get_message("DLQ", 2);
  CHECK(header(dead, "Jetfan-Sequence") == std::to_string(seq));
  CHECK(dead.payload == "nak@builder");
  CHECK(count_seq(mesh.seen("builder"), seq) == 3);  // held for it meanwhile, not redelivered
}
