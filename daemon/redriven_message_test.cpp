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

TEST_CASE("a forged dead letter is not redriven: a subject no server takes, or a key not the handler's", "[unit]") {
  const std::vector<std::string> patterns = {"orders.>"};
  const auto letter = [](const std::string& subject) {
    DeadLetterFacts facts;
    facts.handler = "audit";
    facts.subject = subject;
    return jetstream::StoredMessage{7, "dlq.audit", dead_letter_headers("", facts), "x", ""};
  };
  CHECK_FALSE(why_not_redrivable(letter("ev.orders.created"), patterns, "ev."));
  // The MSG line's fields, forged: a space, a CR, a NUL.
  CHECK(why_not_redrivable(letter("ev.orders.x 4242 1 0 0 0 1 91 126"), patterns, "ev.") ==
        "its subject has the byte 0x20 at 11");
  // A header value ends at a CR: one comes in the letter's own subject (nats-server 2.9 stores it).
  CHECK(why_not_redrivable(jetstream::StoredMessage{7, "ev.orders.a\rb", "", "x", ""}, patterns, "ev.") ==
        "its subject has the byte 0x0d at 11");
  CHECK(why_not_redrivable(letter(std::string("ev.orders.a\0b", 13)), patterns, "ev.") ==
        "its subject has the byte 0x00 at 11");
  CHECK(why_not_redrivable(letter("ev.orders." + std::string(20000, 'a')), patterns, "ev.") ==
        "its subject is 20010 bytes, more than 4096");
  CHECK(why_not_redrivable(letter("ev.orders..x"), patterns, "ev.") == "its subject has an empty token");
  CHECK(why_not_redrivable(letter("ev.orders.>"), patterns, "ev.") == "its subject has a wildcard token");
  // Not the handler's: another prefix, or a key its patterns do not match.
  CHECK(why_not_redrivable(letter("other.orders.created"), patterns, "ev.") ==
        "its subject does not start with key.strip_prefix \"ev.\"");
  CHECK(why_not_redrivable(letter("ev.payroll.secret"), patterns, "ev.") ==
        "its key \"payroll.secret\" matches none of the handler's patterns");
  // Without Jetfan-Subject, the letter's own subject is checked.
  CHECK(why_not_redrivable(jetstream::StoredMessage{9, "dlq.audit", "", "x", ""}, patterns, "ev.") ==
        "its subject does not start with key.strip_prefix \"ev.\"");
}
