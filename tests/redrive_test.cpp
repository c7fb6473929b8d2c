// Integration tests: `jetfan dlq list` and `jetfan redrive` against a real nats-server with a
// dead-letter stream made as a controller would make it, the real jetfan and real handlers.

#include <catch2/catch.hpp>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "control.hpp"
#include "mesh.hpp"

using namespace jetfan::testing;

namespace {

// builder fails what asks it to (budget 3, dead letters); audit takes everything.
std::string handlers(const std::string& builder_extra = "") {
  return "  - name: builder\n    patterns: [\"a.*\"]\n" + builder_extra +
         "    retry: {max_attempts: 3, backoff: 10ms, backoff_max: 40ms}\n"
         "    dead_letter: {subject: dlq.node1_builder.builder}\n"
         "  - name: audit\n    patterns: [\"#\"]\n";
}

std::size_t count_seq(const std::vector<Seen>& seen, std::uint64_t seq) {
  return static_cast<std::size_t>(
      std::count_if(seen.begin(), seen.end(), [&](const Seen& s) { return s.stream_seq == seq; }));
}

std::string header(const jetfan::example::MeshController::StoredMessage& m, const std::string& name) {
  for (const auto& [key, value] : m.headers) {
    if (key == name) return value;
  }
  return "(none)";
}

// Publishes two messages builder fails for ever, and waits for both dead letters and for the
// consumer to settle. Returns their stream sequences.
std::vector<std::uint64_t> dead_letter_two(Mesh& mesh) {
  const std::vector<std::uint64_t> seqs{mesh.publish("a.one", "nak@builder one"),
                                        mesh.publish("a.two", "nak@builder two")};
  REQUIRE(wait_until([&] { return mesh.controller().stream_messages("DLQ") == 2; }));
  REQUIRE(mesh.wait_settled());
  return seqs;
}

int jetfan_cli(Mesh& mesh, std::vector<std::string> args, std::string& output) {
  args.push_back("--control");
  args.push_back(mesh.control_path());
  return run_jetfan(args, mesh.dir(), output);
}

}  // namespace

TEST_CASE("dlq list shows what was dead-lettered, and a dry run changes nothing", "[integration]") {
  Mesh mesh;
  mesh.controller().create_stream("DLQ", {"dlq.>"});
  mesh.start_jetfan(mesh.config(handlers()));
  mesh.start_handler("builder");
  mesh.start_handler("audit");
  const auto seqs = dead_letter_two(mesh);
  std::string output;
  REQUIRE(jetfan_cli(mesh, {"dlq", "list", "--handler", "builder"}, output) == 0);
  CHECK(output.find("seq 1  subject events.a.one  attempts 3") != std::string::npos);
  CHECK(output.find("seq 2  subject events.a.two  attempts 3") != std::string::npos);
  CHECK(output.find("reason max_attempts 3 used up; last: nak") != std::string::npos);
  CHECK(output.find("OK 2 dead letter(s) of handler \"builder\" in stream \"DLQ\"") != std::string::npos);

  REQUIRE(jetfan_cli(mesh, {"dlq", "list", "--handler", "builder", "--json", "--seq", "2"}, output) == 0);
  const auto doc = nlohmann::json::parse(output);
  CHECK(doc["schema"] == "jetfan.dlq/1");
  CHECK(doc["stream"] == "DLQ");
  REQUIRE(doc["dead_letters"].size() == 1);
  CHECK(doc["dead_letters"][0]["seq"] == 2);
  CHECK(doc["dead_letters"][0]["original_seq"] == seqs[1]);
  CHECK(doc["dead_letters"][0]["attempts"] == 3);

  const std::size_t before = mesh.seen("builder").size();
  REQUIRE(jetfan_cli(mesh, {"redrive", "--handler", "builder", "--all", "--dry-run"}, output) == 0);
  CHECK(output.find("seq 1: would be redriven") != std::string::npos);
  CHECK(output.find("seq 2: would be redriven") != std::string::npos);
  CHECK(mesh.controller().stream_messages("DLQ") == 2);
  CHECK(mesh.seen("builder").size() == before);

  CHECK(jetfan_cli(mesh, {"dlq", "list", "--handler", "audit"}, output) == 64);  // it has no dead letters
  CHECK(output.find("no dead_letter subject") != std::string::npos);
  CHECK(jetfan_cli(mesh, {"redrive", "--handler", "builder"}, output) == 64);  // neither --all nor --seq
}

TEST_CASE("a redrive reaches its one handler and deletes each dead letter once it confirmed it", "[integration]") {
  Mesh mesh;
  mesh.controller().create_stream("DLQ", {"dlq.>"});
  mesh.start_jetfan(mesh.config(handlers()));
  auto& failing = mesh.start_handler("builder");
  mesh.start_handler("audit");
  const auto seqs = dead_letter_two(mesh);
  const auto audit_before = mesh.seen("audit");
  // The builder is fixed: a new one takes everything.
  failing.kill_now();
  failing.wait(10s);
  mesh.start_handler("builder", {"--only", "ack"});
  std::string output;
  REQUIRE(jetfan_cli(mesh, {"redrive", "--handler", "builder", "--all"}, output) == 0);
  CHECK(output.find("seq 1: confirmed by the handler, deleted") != std::string::npos);
  CHECK(output.find("seq 2: confirmed by the handler, deleted") != std::string::npos);
  CHECK(output.find("OK redrive of handler \"builder\": 2 dead letter(s), 2 confirmed and deleted") !=
        std::string::npos);
  CHECK(mesh.controller().stream_messages("DLQ") == 0);
  const auto fixed = mesh.seen("builder", 2);
  REQUIRE(fixed.size() == 2);
  CHECK(fixed[0].stream_seq == seqs[0]);  // in order, as they were
  CHECK(fixed[0].key == "a.one");
  CHECK(fixed[0].payload == "nak@builder one");
  CHECK(fixed[1].stream_seq == seqs[1]);
  CHECK(mesh.seen("audit").size() == audit_before.size());  // no other handler saw them
  CHECK(mesh.state().num_ack_pending == 0);
  const std::string status = control_request(mesh.control_path(), "STATUS JSON");
  const auto doc = nlohmann::json::parse(status);
  CHECK(doc["handlers"][0]["redrive"]["confirmed"] == 2);
  const auto metrics = parse_metrics(control_request(mesh.control_path(), "METRICS"));
  CHECK(metrics.at("jetfan_handler_redrives_total{handler=\"builder\",outcome=\"confirmed\"}") == 2);
}

TEST_CASE("a redriven dead letter the handler fails again is dead-lettered anew before the old one goes",
          "[integration]") {
  Mesh mesh;
  mesh.controller().create_stream("DLQ", {"dlq.>"});
  mesh.start_jetfan(mesh.config(handlers()));
  mesh.start_handler("builder");
  mesh.start_handler("audit");
  const auto seqs = dead_letter_two(mesh);
  std::string output;
  CHECK(jetfan_cli(mesh, {"redrive", "--handler", "builder", "--seq", "1"}, output) == 1);
  CHECK(output.find("seq 1: failed again: dead-lettered anew") != std::string::npos);
  CHECK(output.find("1 failed again") != std::string::npos);
  CHECK(count_seq(mesh.seen("builder"), seqs[0]) == 6);  // its budget again: 3 more
  REQUIRE(mesh.controller().stream_messages("DLQ") == 2);
  const auto anew = mesh.controller().get_message("DLQ", 3);
  CHECK(header(anew, "Jetfan-Sequence") == std::to_string(seqs[0]));
  CHECK(header(anew, "Jetfan-Subject") == "events.a.one");
  CHECK(header(anew, "Jetfan-Attempts") == "3");
  CHECK(anew.payload == "nak@builder one");
  CHECK_THROWS(mesh.controller().get_message("DLQ", 1));  // the old one is deleted
}

TEST_CASE("a jetfan killed mid-redrive has deleted no dead letter its handler did not confirm", "[integration]") {
  Mesh mesh;
  mesh.controller().create_stream("DLQ", {"dlq.>"});
  mesh.start_jetfan(mesh.config(handlers()));
  auto& failing = mesh.start_handler("builder");
  mesh.start_handler("audit");
  dead_letter_two(mesh);
  failing.kill_now();
  failing.wait(10s);
  mesh.start_handler("builder", {"--only", "hang"});  // takes it and never answers
  ControlStream redrive(mesh.control_path(), "REDRIVE builder ALL");
  REQUIRE(wait_until([&] { return mesh.seen("builder", 2).size() == 1; }));
  mesh.jetfan().kill_now();
  mesh.jetfan().wait(10s);
  CHECK(mesh.controller().stream_messages("DLQ") == 2);
  while (const auto line = redrive.line(2s)) CHECK(line->find("deleted") == std::string::npos);
}

TEST_CASE("an ordered handler's key goes on once a dead letter is stored, and its redrive comes after",
          "[integration]") {
  Mesh mesh;
  mesh.controller().create_stream("DLQ", {"dlq.>"});
  mesh.start_jetfan(mesh.config(handlers("    order_by: key\n")));
  auto& failing = mesh.start_handler("builder");
  mesh.start_handler("audit");
  const std::uint64_t first = mesh.publish("a.k", "nak@builder first");
  const std::uint64_t second = mesh.publish("a.k", "second");
  REQUIRE(wait_until([&] { return count_seq(mesh.seen("builder"), second) == 1; }));
  REQUIRE(mesh.controller().stream_messages("DLQ") == 1);
  const auto seen = mesh.seen("builder");
  CHECK(seen.back().stream_seq == second);  // after the first was given up
  REQUIRE(mesh.wait_settled());
  failing.kill_now();
  failing.wait(10s);
  mesh.start_handler("builder", {"--only", "ack"});
  std::string output;
  REQUIRE(jetfan_cli(mesh, {"redrive", "--handler", "builder", "--all"}, output) == 0);
  const auto redriven = mesh.seen("builder", 2);
  REQUIRE(redriven.size() == 1);
  CHECK(redriven[0].stream_seq == first);
  CHECK(mesh.controller().stream_messages("DLQ") == 0);
}

TEST_CASE("a forged dead letter never reaches a handler: listed as not redrivable, and left in the stream",
          "[integration]") {
  // Anyone who may publish on the dead-letter subject can write one: a subject that would put fields
  // of its own on the MSG line, and one whose key is not the handler's.
  Mesh mesh;
  mesh.controller().create_stream("DLQ", {"dlq.>"});
  mesh.start_jetfan(mesh.config(handlers()));
  mesh.start_handler("builder", {"--only", "ack"});
  mesh.start_handler("audit");
  const std::string subject = "dlq.node1_builder.builder";
  mesh.controller().publish(subject, "forged",
                            {{"Jetfan-Handler", "builder"}, {"Jetfan-Subject", "events.a.x 4242 1 0 0 0 1 91 126"}});
  mesh.controller().publish(subject, "forged",
                            {{"Jetfan-Handler", "builder"}, {"Jetfan-Subject", "events.payroll.secret"}});
  std::string output;
  REQUIRE(jetfan_cli(mesh, {"dlq", "list", "--handler", "builder"}, output) == 0);
  CHECK_THAT(output, Catch::Contains("seq 1  subject events.a.x 4242 1 0 0 0 1 91 126") &&
                         Catch::Contains("NOT REDRIVABLE: its subject has the byte 0x20 at 10") &&
                         Catch::Contains("NOT REDRIVABLE: its key \"payroll.secret\" matches none of the handler's "
                                         "patterns") &&
                         Catch::Contains("(2 not redrivable)"));
  CHECK(jetfan_cli(mesh, {"redrive", "--handler", "builder", "--all"}, output) == 1);
  CHECK_THAT(output,
             Catch::Contains("seq 1: not redriven: its subject has the byte 0x20 at 10; it stays in the stream"));
  CHECK_THAT(output, Catch::Contains("0 confirmed and deleted, 0 failed again (dead-lettered anew), 0 kept, 2 not "
                                     "redrivable"));
  CHECK(mesh.controller().stream_messages("DLQ") == 2);
  CHECK(mesh.seen("builder").empty());
  const auto metrics = parse_metrics(control_request(mesh.control_path(), "METRICS"));
  CHECK(metrics.at("jetfan_handler_redrives_total{handler=\"builder\",outcome=\"refused\"}") == 2);
  CHECK_THAT(mesh.jetfan_log(), Catch::Contains("anyone who may publish on \"dlq.node1_builder.builder\" can forge"));
}
