#include <catch2/catch.hpp>
#include <charconv>
#include <random>
#include <string>

#include "jetstream_subject.hpp"

using namespace jetfan::jetstream;

TEST_CASE("a key is the subject less the prefix", "[unit]") {
  CHECK(key_of("events.mesh-build-machine.built", "events.") == "mesh-build-machine.built");
  CHECK(key_of("a.b", "") == "a.b");
  CHECK_FALSE(key_of("other.mesh.built", "events."));
  CHECK_FALSE(key_of("events.", "events."));
  CHECK_FALSE(key_of("events", "events."));
  CHECK_FALSE(key_of("", ""));
}

TEST_CASE("ack subjects of both forms are read", "[unit]") {
  const auto old_form = parse_ack_subject("$JS.ACK.EVENTS.node1_builder.3.42.17.1700000000000000000.5");
  REQUIRE(old_form);
  CHECK(old_form->deliveries == 3);
  CHECK(old_form->stream_seq == 42);
  CHECK(old_form->consumer_seq == 17);
  CHECK(old_form->published_ns == 1700000000000000000);
  const auto new_form = parse_ack_subject("$JS.ACK.hub.ACCHASH.EVENTS.node1_builder.1.9.8.1700000000000000001.0.tok");
  REQUIRE(new_form);
  CHECK(new_form->deliveries == 1);
  CHECK(new_form->stream_seq == 9);
  CHECK(new_form->consumer_seq == 8);
  CHECK(new_form->published_ns == 1700000000000000001);
}

TEST_CASE("numbers in an ack subject: up to 2^64-1, never more, digits only", "[unit]") {
  const auto largest = parse_ack_subject("$JS.ACK.S.d.18446744073709551615.9999999999999999999.1.17.0");
  REQUIRE(largest);
  CHECK(largest->deliveries == 18446744073709551615ULL);
  CHECK(largest->stream_seq == 9999999999999999999ULL);
  CHECK_FALSE(parse_ack_subject("$JS.ACK.S.d.18446744073709551616.1.1.17.0"));  // one more: overflow
  CHECK_FALSE(parse_ack_subject("$JS.ACK.S.d.99999999999999999999.1.1.17.0"));  // twenty nines
  CHECK_FALSE(parse_ack_subject("$JS.ACK.S.d.1.4x2.1.17.0"));
  CHECK_FALSE(parse_ack_subject("$JS.ACK.S.d.1.-4.1.17.0"));
  CHECK(parse_ack_subject("$JS.ACK.S.d.1.2.3.tm.0")->published_ns == 0);  // a timestamp that is not one: unknown
}

TEST_CASE("anything else is not an ack subject", "[unit]") {
  for (const char* bad :
       {"", "_INBOX.abc", "$JS.ACK.EVENTS.d.x.42.17.1.5", "$JS.ACK.EVENTS.d.3.42.17.1", "$JS.NAK.EVENTS.d.3.42.17.1.5",
        "$JS.ACK.a.b.EVENTS.d.3.42.17.1", "$JS.ACK", "$JS.ACK.", "$JS.ACKS.EVENTS.d.3.42.17.1.5",
        "$JS.ACK.EVENTS.d.3.42.17.1.5.", "$JS.ACK.EVENTS.d.3..17.1.5"}) {
    INFO(bad);
    CHECK_FALSE(parse_ack_subject(bad));
  }
}

TEST_CASE("the pull subject names stream and durable", "[unit]") {
  CHECK(pull_subject("EVENTS", "node1_builder") == "$JS.API.CONSUMER.MSG.NEXT.EVENTS.node1_builder");
}

TEST_CASE("numbers in an ack subject read as from_chars reads them, at every length and digit", "[unit]") {
  std::mt19937_64 random(7);
  for (int i = 0; i < 20000; ++i) {
    const std::size_t length = 1 + random() % 19;
    std::string digits;
    for (std::size_t d = 0; d < length; ++d) digits.push_back(static_cast<char>('0' + random() % 10));
    std::string broken = digits;
    // One byte not a digit, at any place: just below '0', just above '9', or anything else.
    const char not_digit[] = {'/', ':', '.', ' ', 'a', '\x80', '\xff', '\0', static_cast<char>(0x30 + 0x10)};
    broken[random() % length] = not_digit[random() % sizeof not_digit];
    std::uint64_t expected = 0;
    std::from_chars(digits.data(), digits.data() + digits.size(), expected);
    const std::string good = "$JS.ACK.S.d.1." + digits + ".1.17.0";
    const std::string bad = "$JS.ACK.S.d.1." + broken + ".1.17.0";
    INFO(good << " / " << bad);
    REQUIRE(parse_ack_subject(good));
    CHECK(parse_ack_subject(good)->stream_seq == expected);
    CHECK_FALSE(parse_ack_subject(bad));
  }
}
