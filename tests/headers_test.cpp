// Integration tests: header blocks byte for byte. Messages published with raw HPUBs (cnats cannot
// publish such blocks) reach a real handler through the real jetfan and a real nats-server exactly
// as JetStream stored them (MSG.GET), and so does a dead letter, and a redrive of it. (nats-server
// 2.9 and 2.10 store a published status line; 2.15 drops it.)

#include <catch2/catch.hpp>

#include <string>
#include <variant>
#include <vector>

#include "base64.hpp"
#include "mesh.hpp"
#include "raw_nats.hpp"
#include "stream_message.hpp"

using namespace jetfan::testing;
using namespace std::string_literals;

namespace {

std::string header(const jetfan::example::MeshController::StoredMessage& m, const std::string& name) {
  for (const auto& [key, value] : m.headers) {
    if (key == name) return value;
  }
  return "(none)";
}

// The header block stream EVENTS holds for `seq`, byte for byte (MSG.GET).
std::string stored_headers(Mesh& mesh, std::uint64_t seq) {
  const auto answer = jetfan::jetstream::parse_msg_get(mesh.controller().request(
      jetfan::jetstream::msg_get_subject("EVENTS"), jetfan::jetstream::msg_get_next_request(seq, "")));
  const auto* stored = std::get_if<jetfan::jetstream::StoredMessage>(&answer);
  REQUIRE(stored);
  REQUIRE(stored->seq == seq);
  return stored->headers;
}

// What JetStream keeps of a block published as `sent`: the block itself, but nats-server 2.15 keeps
// no status line (NATS/1.0 503 ...) of a published message.
bool kept_as_sent(const std::string& stored, const std::string& sent) {
  if (stored == sent) return true;
  const std::size_t line_end = sent.find("\r\n");
  return sent.rfind("NATS/1.0 ", 0) == 0 && stored == "NATS/1.0" + sent.substr(line_end);
}

}  // namespace

TEST_CASE("a handler gets each message's header block byte for byte, as JetStream sent it", "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config("  - name: audit\n    patterns: [\"#\"]\n"));
  mesh.start_handler("audit", {"--details", "yes"});
  RawNats nats(mesh.url());
  struct Sent {
    std::string headers;
    std::string payload;
    std::uint64_t seq = 0;
  };
  std::vector<Sent> sent = {
      {"NATS/1.0\r\nK: a\0b\r\nTrace: t\r\n\r\n"s, "a NUL in a value"},
      {"NATS/1.0 503 No Responders\r\nX: y\r\n\r\n", "a status line"},
      {"NATS/1.0\r\nB: 2\r\nA: 1\r\nB: 3\r\nA:  blanks  \r\n\r\n", "repeated names out of order"},
      {"NATS/1.0\r\n\r\n", "a block without fields"},
      {"", "no block"},
      // An empty payload: cnats parses the block before jetfan can read it, so it is rebuilt (the
      // same bytes, for one plain field), and jetfan says so once.
      {"NATS/1.0\r\nOnly: one\r\n\r\n", ""},
      {"NATS/1.0\r\nLast: z\r\nFirst: a\r\n\r\n", "after the rebuilt one, as received again"},
  };
  for (auto& s : sent) s.seq = nats.publish("events.a.one", s.headers, s.payload);
  REQUIRE(wait_until([&] { return mesh.details("audit").size() >= sent.size(); }));
  const auto got = mesh.details("audit");
  REQUIRE(got.size() == sent.size());
  for (std::size_t i = 0; i < sent.size(); ++i) {
    INFO("message " << i << ": " << sent[i].payload);
    CHECK(got[i].stream_seq == sent[i].seq);
    const std::string stored = stored_headers(mesh, sent[i].seq);
    CHECK(got[i].headers == stored);
    CHECK(kept_as_sent(stored, sent[i].headers));
    CHECK(got[i].deliveries == 1);
    CHECK(got[i].server_deliveries == 1);
  }
  CHECK(mesh.wait_settled());
  CHECK(mesh.wait_for_log("parsed its header block in place"));
  const std::string log = mesh.jetfan_log();
  CHECK(log.find("does not agree with the NATS client library") == std::string::npos);
  CHECK(log.find("is not where jetfan expects") == std::string::npos);
}

TEST_CASE("a dead letter carries the message's header block byte for byte, and its redrive gives it back",
          "[integration]") {
  Mesh mesh;
  mesh.controller().create_stream("DLQ", {"dlq.>"});
  mesh.start_jetfan(
      mesh.config("  - name: builder\n    patterns: [\"a.*\"]\n    dead_letter: {subject: dlq.builder}\n"));
  auto& failing = mesh.start_handler("builder", {"--only", "term"});
  RawNats nats(mesh.url());
  const std::string block = "NATS/1.0 503 No Responders\r\nB: 2\r\nK: a\0b\r\nB: 1\r\n\r\n"s;
  const std::uint64_t seq = nats.publish("events.a.one", block, "the payload");
  const std::string stored = stored_headers(mesh, seq);
  CHECK(kept_as_sent(stored, block));
  REQUIRE(wait_until([&] { return mesh.controller().stream_messages("DLQ") == 1; }));
  REQUIRE(mesh.wait_settled());
  const auto dead = mesh.controller().get_message("DLQ", 1);
  CHECK(jetfan::jetstream::base64_decode(header(dead, "Jetfan-Headers")) == stored);
  CHECK(header(dead, "B") == "2");  // the fields, for people and tools, as cnats writes them
  CHECK(header(dead, "Jetfan-Sequence") == std::to_string(seq));
  CHECK(dead.payload == "the payload");

  failing.kill_now();
  failing.wait(10s);
  mesh.start_handler("builder", {"--only", "ack", "--details", "yes"});
  std::string output;
  REQUIRE(run_jetfan({"redrive", "--handler", "builder", "--all", "--control", mesh.control_path()}, mesh.dir(),
                     output) == 0);
  const auto redriven = mesh.details("builder", 2);
  REQUIRE(redriven.size() == 1);
  CHECK(redriven[0].stream_seq == seq);
  // The block as it came, then the dead letter's Jetfan-* fields (in the order cnats published them)
  // before its blank line.
  const std::string& got = redriven[0].headers;
  CHECK(got.rfind(stored.substr(0, stored.size() - 2) + "Jetfan-", 0) == 0);
  CHECK(got.find("\r\nJetfan-Handler: builder\r\n") != std::string::npos);
  CHECK(got.find("\r\nJetfan-Headers: " + header(dead, "Jetfan-Headers") + "\r\n") != std::string::npos);
  CHECK(got.ends_with("\r\n\r\n"));
  CHECK(mesh.controller().stream_messages("DLQ") == 0);
}
