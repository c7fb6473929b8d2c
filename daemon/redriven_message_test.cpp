#include "redriven_message.hpp"

#include <catch2/catch.hpp>

#include "dead_letters.hpp"

using namespace jetfan;

TEST_CASE("a redriven dead letter is the message again: its subject, block, payload and sequence", "[unit]") {
  MessageBytesArena arena;
  const std::string original = "NATS/1.0\r\nA: 1\r\n\r\n";
  DeadLetterFacts facts;
  facts.handler = "audit";
  facts.reason = "TERM";
  facts.attempts = 2;
  facts.subject = "orders.eu.created";
  facts.stream = "ORDERS";
  facts.stream_seq = 42;
  facts.consumer = "module";
  facts.deliveries = 3;
  jetstream::StoredMessage letter{7, "dlq.audit", dead_letter_headers(original, facts), std::string("pay\0load", 8),
                                  ""};
  {
    const RedrivenMessage made = redriven_message(letter, arena);
    CHECK(made.original_seq == 42);
    CHECK(made.bytes->subject() == "orders.eu.created");
    CHECK(made.bytes->headers() == redriven_headers(letter.headers));
    CHECK(made.bytes->headers().starts_with("NATS/1.0\r\nA: 1\r\n"));
    CHECK(made.bytes->payload() == std::string_view("pay\0load", 8));
    CHECK(made.bytes->reply().empty());  // no ack subject: a redrive is not the server's delivery
    letter = {};                         // the bytes are its own
    CHECK(made.bytes->subject() == "orders.eu.created");
    CHECK(arena.messages == 1);
  }
  CHECK(arena.messages == 0);
}

TEST_CASE("a letter without jetfan's fields keeps its own subject, and sequence 0", "[unit]") {
  MessageBytesArena arena;
  const jetstream::StoredMessage letter{9, "dlq.audit", "", "x", ""};
  const RedrivenMessage made = redriven_message(letter, arena);
  CHECK(made.original_seq == 0);
  CHECK(made.bytes->subject() == "dlq.audit");
  CHECK(made.bytes->payload() == "x");
}
