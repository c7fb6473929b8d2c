#include "unreadable_subject.hpp"

#include <catch2/catch.hpp>

#include <map>
#include <vector>

using namespace jetfan;

namespace {

// Runs the search to its end over a stream given as seq -> subject (absent: deleted), the way the
// daemon does: one MSG.GET at a time, the first message at or after the sequence asked.
struct Stream {
  std::map<std::uint64_t, std::string> messages;
  std::vector<std::uint64_t> asked;

  std::optional<UnreadableFound> run(UnreadableSearch& search) {
    while (const auto seq = search.next_read()) {
      asked.push_back(*seq);
      const auto at = messages.lower_bound(*seq);
      std::optional<UnreadableFound> found =
          at == messages.end() ? search.read(*seq, std::nullopt) : search.read(at->first, std::string_view(at->second));
      if (found) return found;
    }
    return std::nullopt;
  }
};

Stream stream_with_bad_at(std::uint64_t bad, std::uint64_t last) {
  Stream stream;
  for (std::uint64_t s = 1; s <= last; ++s) stream.messages[s] = s == bad ? "events.a\rb" : "events.ok";
  return stream;
}

}  // namespace

TEST_CASE("subjects cnats splits a MSG line at are not readable, the rest are") {
  CHECK(readable_subject("events.a.b"));
  CHECK(readable_subject("events.\xc3\xa9"));  // UTF-8 passes through
  CHECK_FALSE(readable_subject("events.a\rb"));
  CHECK_FALSE(readable_subject("events.a\nb"));
  CHECK_FALSE(readable_subject("events.a b"));
  CHECK_FALSE(readable_subject("events.a\tb"));
  CHECK_FALSE(readable_subject(std::string_view("events.a\0b", 10)));
  CHECK_FALSE(readable_subject(""));
}

TEST_CASE("escape_subject shows every byte of a subject on one printable line") {
  CHECK(escape_subject("events.a\rb") == "events.a\\rb");
  CHECK(escape_subject("a\\b\n\t") == "a\\\\b\\n\\t");
  CHECK(escape_subject(std::string_view("a\0\x7f\xff", 4)) == "a\\x00\\x7f\\xff");
  CHECK(escape_subject("events.plain") == "events.plain");
}

TEST_CASE("ack_subject is the server's nine-token $JS.ACK form") {
  CHECK(ack_subject("EVENTS", "node1_builder", 1, 4, 9) == "$JS.ACK.EVENTS.node1_builder.1.4.9.0.0");
}

TEST_CASE("after a break, the first delivery past the last one read is found by its subject") {
  UnreadableSearch search;
  search.bound(0, 0);
  for (std::uint64_t s = 1; s <= 3; ++s) search.arrived(s, s);
  search.disconnected();
  CHECK(search.break_open());
  search.reconnected();
  // The server delivered 7 (4 broke the connection; 5-7 went with it); jetfan acked 1-3.
  search.heard({7, 7, 3});
  REQUIRE(search.searching());
  Stream stream = stream_with_bad_at(4, 7);
  const auto found = stream.run(search);
  REQUIRE(found);
  CHECK(found->stream_seq == 4);
  CHECK(found->subject == "events.a\rb");
  CHECK(found->consumer_seq == 4);
  CHECK(found->lost_after == 3);
  CHECK(found->lost_to == 7);
  CHECK(found->nak_consumer_seq == 7);
  CHECK_FALSE(found->again);
  CHECK(stream.asked == std::vector<std::uint64_t>{4});
  CHECK_FALSE(search.searching());
  CHECK(search.not_found() == 0);
}

TEST_CASE("a break after which deliveries go on without a hole searches nothing") {
  UnreadableSearch search;
  search.arrived(1, 1);
  search.disconnected();
  search.reconnected();
  search.arrived(2, 2);  // the next delivery reached jetfan: nothing was lost with the connection
  search.heard({2, 2, 1});
  CHECK_FALSE(search.searching());
  search.heard({2, 2, 2});
  search.heard({2, 2, 2});
  CHECK_FALSE(search.break_open());
  CHECK(search.next_read() == std::nullopt);
}

TEST_CASE("an answer from before the reconnect does not start or end a search") {
  UnreadableSearch search;
  search.arrived(1, 1);
  search.disconnected();
  search.heard({5, 5, 0});
  CHECK_FALSE(search.searching());
  CHECK(search.break_open());
  search.reconnected();
  search.heard({5, 5, 0});
  CHECK(search.searching());
}

TEST_CASE("a server that delivered nothing more since the break keeps the break open a few answers") {
  UnreadableSearch search;
  search.arrived(3, 3);
  search.disconnected();
  search.reconnected();
  for (int i = 1; i < UnreadableSearch::kQuietAnswers; ++i) {
    search.heard({3, 3, 3});
    CHECK(search.break_open());
  }
  search.heard({3, 3, 3});
  CHECK_FALSE(search.break_open());
}

TEST_CASE("a culprit that is a redelivery below the last message read is found in the second range") {
  UnreadableSearch search;
  // Delivery 2 (stream seq 2) never reached jetfan (lost before, say); jetfan read 1 and 3..6, and
  // the break came at delivery 7: stream seq 2 again, redelivered after AckWait.
  search.arrived(1, 1);
  for (std::uint64_t s = 3; s <= 6; ++s) search.arrived(s, s);
  search.disconnected();
  search.reconnected();
  search.heard({8, 6, 1});  // delivered up to stream seq 6 (7 and 8 were redeliveries)
  Stream stream = stream_with_bad_at(2, 6);
  const auto found = stream.run(search);
  REQUIRE(found);
  CHECK(found->stream_seq == 2);
  CHECK(found->consumer_seq == 7);
  CHECK(stream.asked == std::vector<std::uint64_t>{2});  // (6, 6] is empty: the floor's range at once
}

TEST_CASE("deleted messages and messages outside the filter are stepped over") {
  UnreadableSearch search;
  search.arrived(1, 1);
  search.disconnected();
  search.reconnected();
  search.heard({3, 9, 1});
  Stream stream;
  stream.messages = {{1, "events.ok"}, {5, "events.ok"}, {9, "events.a b"}};
  const auto found = stream.run(search);
  REQUIRE(found);
  CHECK(found->stream_seq == 9);
  CHECK(stream.asked == std::vector<std::uint64_t>{2, 6});
}

TEST_CASE("no unreadable subject in reach ends the search without a verdict") {
  UnreadableSearch search;
  search.arrived(10, 10);
  search.disconnected();
  search.reconnected();
  search.heard({12, 12, 8});
  Stream stream = stream_with_bad_at(0, 12);
  CHECK_FALSE(stream.run(search));
  CHECK(stream.asked == std::vector<std::uint64_t>{11, 12, 9, 10});
  CHECK(search.not_found() == 1);
  CHECK_FALSE(search.searching());
  CHECK_FALSE(search.break_open());
}

TEST_CASE("a search reads at most kMaxReads messages") {
  UnreadableSearch search;
  search.arrived(1, 1);
  search.disconnected();
  search.reconnected();
  search.heard({2, 1000, 0});
  Stream stream = stream_with_bad_at(900, 1000);
  CHECK_FALSE(stream.run(search));
  CHECK(stream.asked.size() == UnreadableSearch::kMaxReads);
  CHECK(search.not_found() == 1);
}

TEST_CASE("a failed read ends the search, and the next break starts another") {
  UnreadableSearch search;
  search.arrived(1, 1);
  search.disconnected();
  search.reconnected();
  search.heard({3, 3, 1});
  REQUIRE(search.next_read() == 2);
  CHECK(search.next_read() == std::nullopt);  // one at a time
  search.read_failed();
  CHECK_FALSE(search.searching());
  CHECK(search.not_found() == 1);
  search.disconnected();
  search.reconnected();
  search.heard({5, 5, 1});
  CHECK(search.searching());
  CHECK(search.breaks() == 2);
}

TEST_CASE("the same culprit found at a second break is marked again") {
  UnreadableSearch search;
  search.arrived(1, 1);
  for (int round = 0; round < 2; ++round) {
    search.disconnected();
    search.reconnected();
    search.heard({2 + static_cast<std::uint64_t>(round), 2, 1});
    Stream stream = stream_with_bad_at(2, 2);
    const auto found = stream.run(search);
    REQUIRE(found);
    CHECK(found->again == (round == 1));
  }
}

TEST_CASE("a break during a search does not restart it") {
  UnreadableSearch search;
  search.arrived(1, 1);
  search.disconnected();
  search.reconnected();
  search.heard({4, 4, 1});
  REQUIRE(search.next_read() == 2);
  search.disconnected();
  CHECK(search.searching());
  CHECK_FALSE(search.break_open());
  CHECK(search.read(2, std::string_view("events.a\rb")));
}
