#include <catch2/catch.hpp>

#include "base64.hpp"
#include "dead_letters.hpp"

using namespace jetfan;

namespace {

DeadLetterFacts facts() {
  DeadLetterFacts f;
  f.handler = "builder";
  f.reason = "TERM";
  f.attempts = 1;
  f.subject = "events.a.one";
  f.stream = "EVENTS";
  f.stream_seq = 42;
  f.consumer = "node1_builder";
  f.deliveries = 1;
  return f;
}

}  // namespace

TEST_CASE("dead letter headers: jetfan's Nats-Msg-Id first, then the message's own headers as they were", "[unit]") {
  const std::string block =
      dead_letter_headers("NATS/1.0\r\nNats-Msg-Id: order-1\r\nTrace:  two  spaces\r\n\r\n", facts());
  CHECK(block.rfind("NATS/1.0\r\nNats-Msg-Id: jetfan:EVENTS:node1_builder:42:builder\r\n"
                    "Nats-Msg-Id: order-1\r\nTrace:  two  spaces\r\nJetfan-Handler: builder\r\n",
                    0) == 0);
  CHECK(block.size() >= 4);
  CHECK(block.substr(block.size() - 4) == "\r\n\r\n");
}

TEST_CASE("dead letter headers: a redriven dead letter's Jetfan-* headers and jetfan id give way to new ones",
          "[unit]") {
  DeadLetterFacts again = facts();
  again.redriven_from = 7;
  const std::string block = dead_letter_headers(
      "NATS/1.0\r\nNats-Msg-Id: jetfan:EVENTS:node1_builder:42:builder\r\nnats-msg-id:  "
      "jetfan:EVENTS:node1_builder:1:x\r\n"
      "Nats-Msg-Id: order-1\r\nJETFAN-Reason: TERM\r\n\r\n",
      again);
  CHECK(block.rfind(
            "NATS/1.0\r\nNats-Msg-Id: jetfan:EVENTS:node1_builder:42:builder:redrive:7\r\nNats-Msg-Id: order-1\r\n"
            "Jetfan-Handler: builder\r\n",
            0) == 0);
  CHECK(block.find("jetfan:EVENTS:node1_builder:1:x") == std::string::npos);
  CHECK(block.find("JETFAN-Reason") == std::string::npos);
}

TEST_CASE("dead letter dedup id: one per message, handler and redrive", "[unit]") {
  DeadLetterFacts a = facts();
  DeadLetterFacts b = facts();
  b.handler = "checker";
  DeadLetterFacts c = facts();
  c.redriven_from = 3;
  CHECK(dedup_id(a) == "jetfan:EVENTS:node1_builder:42:builder");
  CHECK(dedup_id(a) != dedup_id(b));
  CHECK(dedup_id(a) != dedup_id(c));
}

namespace {

// The value of the one field `name` of `block` ("" if none).
std::string field(const std::string& block, const std::string& name) {
  const std::size_t at = block.find("\r\n" + name + ": ");
  if (at == std::string::npos) return "";
  const std::size_t start = at + 2 + name.size() + 2;
  return block.substr(start, block.find("\r\n", start) - start);
}

}  // namespace

TEST_CASE("dead letter headers: the message's block rides along byte for byte in Jetfan-Headers", "[unit]") {
  using namespace std::string_literals;
  for (const std::string& original : {"NATS/1.0 503 No Responders\r\nB: 2\r\nK: a\0b\r\nB: 1\r\n\r\n"s,
                                      "NATS/1.0\r\n\r\n"s, "NATS/1.0\r\nA: 1\r\n\r\n"s}) {
    const std::string block = dead_letter_headers(original, facts());
    CHECK(jetfan::jetstream::base64_decode(field(block, "Jetfan-Headers")) == original);
    CHECK(block.substr(block.size() - 4) == "\r\n\r\n");
  }
  CHECK(dead_letter_headers("", facts()).find("Jetfan-Headers") == std::string::npos);  // no block, no field
}

TEST_CASE("dead letter headers: a redrive gets the message's block back, with the dead letter's Jetfan-* fields",
          "[unit]") {
  using namespace std::string_literals;
  const std::string original = "NATS/1.0 503\r\nB: 2\r\nK: a\0b\r\nB: 1\r\nJetfan-Own: user's\r\n\r\n"s;
  const std::string letter = dead_letter_headers(original, facts());
  const std::string redriven = redriven_headers(letter);
  // The block as it came, less its blank line; then jetfan's fields; then the blank line.
  REQUIRE(redriven.rfind(original.substr(0, original.size() - 2), 0) == 0);
  CHECK(redriven.substr(original.size() - 2) ==
        "Jetfan-Handler: builder\r\nJetfan-Reason: TERM\r\nJetfan-Attempts: 1\r\nJetfan-Subject: events.a.one\r\n"
        "Jetfan-Stream: EVENTS\r\nJetfan-Sequence: 42\r\nJetfan-Consumer: node1_builder\r\nJetfan-Deliveries: 1\r\n"
        "Jetfan-Headers: " +
            field(letter, "Jetfan-Headers") + "\r\n\r\n");
  // Given up again: the dead letter anew carries the same block, not the redriven one.
  DeadLetterFacts again = facts();
  again.redriven_from = 9;
  const std::string anew = dead_letter_headers(redriven, again);
  CHECK(jetfan::jetstream::base64_decode(field(anew, "Jetfan-Headers")) == original);
  CHECK(redriven_headers(anew).rfind(original.substr(0, original.size() - 2), 0) == 0);
}

TEST_CASE("dead letter headers: a dead letter of a message without a block is redriven as it is", "[unit]") {
  const std::string letter = dead_letter_headers("", facts());
  CHECK(redriven_headers(letter) == letter);
  CHECK(redriven_headers("NATS/1.0\r\nJetfan-Headers: %%%\r\n\r\n") == "NATS/1.0\r\nJetfan-Headers: %%%\r\n\r\n");
}
