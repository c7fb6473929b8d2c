#include <catch2/catch.hpp>

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
