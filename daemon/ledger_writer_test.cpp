// LedgerWriter against a FakeUpstream: what goes to the bucket and when, the server's answers,
// failures and timeouts tried again, and what status is told.

#include <catch2/catch.hpp>

#include <map>

#include "fake_upstream.hpp"
#include "ledger_writer.hpp"

using namespace jetfan;
using std::chrono::milliseconds;

namespace {

struct Bench {
  MessageBytesArena arena;
  FakeUpstream upstream{arena, "events."};
  RateLimitedLog warnings{3, Duration(60000)};
  LedgerConfig config{"confirmations", Duration(1000), 100, 4};
  LedgerWriter writer{config, "mod", upstream, warnings};
  TimePoint now{};

  PublishResult stored() {
    PublishResult r;
    r.stored = true;
    r.stream = "KV_confirmations";
    r.stream_seq = 1;
    return r;
  }
  PublishResult refused(std::string_view why) {
    PublishResult r;
    r.error = why;
    return r;
  }

  // The core, as far as the writer asks it: who has confirmed each message still held.
  std::map<std::uint64_t, std::vector<std::string>> held;
  LedgerWriter::ConfirmedNow confirmed_now = [this](std::uint64_t seq) {
    std::vector<std::string_view> names;
    if (const auto found = held.find(seq); found != held.end())
      names.assign(found->second.begin(), found->second.end());
    return names;
  };
  void confirm(std::uint64_t seq, const std::string& handler, TimePoint at) {
    auto& names = held[seq];
    names.push_back(handler);
    writer.confirmed(seq, handler, names.size() == 1, at);
  }
  void settle(std::uint64_t seq, TimePoint at) {
    held.erase(seq);
    writer.settled(seq, at);
  }
  void write(TimePoint at) { writer.write_due(at, confirmed_now); }
};

}  // namespace

TEST_CASE("ledger writer: a message settled within the interval is never written", "[unit]") {
  Bench b;
  b.confirm(7, "audit", b.now);
  b.write(b.now + milliseconds(999));
  b.settle(7, b.now + milliseconds(999));
  b.write(b.now + milliseconds(5000));
  CHECK(b.upstream.published.empty());
  CHECK(b.writer.ledger().tracked() == 0);
}

TEST_CASE("ledger writer: a record put after the interval, deleted once settled", "[unit]") {
  Bench b;
  b.confirm(7, "mailer", b.now);
  b.confirm(7, "audit", b.now + milliseconds(10));
  CHECK(b.writer.next_due() == b.now + milliseconds(1000));
  b.now += milliseconds(1000);
  b.write(b.now);
  REQUIRE(b.upstream.published.size() == 1);
  const auto put = b.upstream.published[0];
  CHECK(LedgerWriter::owns(put.id));
  CHECK(put.subject == "$KV.confirmations.mod.7");
  CHECK(put.headers.empty());
  CHECK(put.payload == R"({"confirmed":["audit","mailer"]})");
  b.writer.on_published(put.id, b.stored(), b.now);
  CHECK(b.writer.view(b.now).puts == 1);

  b.settle(7, b.now);
  b.now += milliseconds(1000);
  b.write(b.now);
  REQUIRE(b.upstream.published.size() == 2);
  const auto del = b.upstream.published[1];
  CHECK(del.subject == "$KV.confirmations.mod.7");
  CHECK(del.headers == "NATS/1.0\r\nKV-Operation: DEL\r\n\r\n");
  CHECK(del.payload.empty());
  b.writer.on_published(del.id, b.stored(), b.now);
  const auto view = b.writer.view(b.now);
  CHECK(view.deletes == 1);
  CHECK(view.tracked == 0);
  CHECK(view.not_written.empty());
  CHECK(view.bucket == "confirmations");
  CHECK(view.interval_seconds == 1.0);
}

TEST_CASE("ledger writer: a refused or unanswered write is counted, said in status, and tried again", "[unit]") {
  Bench b;
  b.confirm(9, "audit", b.now);
  b.now += milliseconds(1000);
  b.write(b.now);
  REQUIRE(b.upstream.published.size() == 1);
  b.writer.on_published(b.upstream.published[0].id, b.refused("no responders"), b.now);
  auto view = b.writer.view(b.now);
  CHECK(view.failed == 1);
  CHECK(view.not_written.find("no responders") != std::string::npos);

  // Tried again an interval later; this time no answer comes at all.
  b.now += milliseconds(1000);
  b.write(b.now);
  REQUIRE(b.upstream.published.size() == 2);
  CHECK(b.writer.view(b.now).waiting == 1);
  b.writer.time_out(b.now + LedgerWriter::kAnswerTimeout - milliseconds(1));
  CHECK(b.writer.view(b.now).failed == 1);
  b.now += LedgerWriter::kAnswerTimeout;
  b.writer.time_out(b.now);
  view = b.writer.view(b.now);
  CHECK(view.failed == 2);
  CHECK(view.waiting == 0);
  CHECK(view.not_written.find("did not answer") != std::string::npos);
  // A late answer to the timed-out write is ignored; the next one that is taken clears the failure.
  b.writer.on_published(b.upstream.published[1].id, b.stored(), b.now);
  CHECK(b.writer.view(b.now).puts == 0);
  b.now += milliseconds(1000);
  b.write(b.now);
  REQUIRE(b.upstream.published.size() == 3);
  b.writer.on_published(b.upstream.published[2].id, b.stored(), b.now);
  view = b.writer.view(b.now);
  CHECK(view.puts == 1);
  CHECK(view.not_written.empty());
}

TEST_CASE("ledger writer: not connected, a write fails at once, and as jetfan stops everything queued goes", "[unit]") {
  Bench b;
  // More than max_in_flight (4), none due yet.
  for (std::uint64_t seq = 1; seq <= 6; ++seq) b.confirm(seq, "audit", b.now + milliseconds(seq * 10));
  // Stopping: all are sent now, before their interval, and no answer is waited for.
  b.writer.write_all(b.now + milliseconds(200), b.confirmed_now);
  CHECK(b.upstream.published.size() == 6);
  b.writer.on_published(b.upstream.published[0].id, b.stored(), b.now);  // not waited for: not counted
  CHECK(b.writer.view(b.now).puts == 0);

  Bench c;
  c.upstream.closed = true;
  c.confirm(5, "audit", c.now);
  c.write(c.now + milliseconds(1000));
  CHECK(c.writer.view(c.now).failed == 1);
  CHECK(c.writer.view(c.now).not_written.find("not connected") != std::string::npos);
}

TEST_CASE("ledger writer: loaded records at or below the ack floor are left to the bucket's TTL", "[unit]") {
  Bench b;
  b.writer.load({{5, {"audit"}}, {6, {"audit", "mailer"}}, {9, {"mailer"}}}, 6);
  CHECK(b.writer.view(b.now).loaded == 1);
  CHECK(b.writer.ledger().confirmed_before(9) == std::vector<std::string>{"mailer"});
  CHECK(b.writer.ledger().confirmed_before(6).empty());
  // Settling a loaded one deletes its record, an interval later.
  b.settle(9, b.now);
  b.write(b.now + milliseconds(1000));
  REQUIRE(b.upstream.published.size() == 1);
  CHECK(b.upstream.published[0].headers.find("KV-Operation: DEL") != std::string::npos);
}

TEST_CASE("ledger writer: only a message's first confirmation is noted, the rest read from the core when due",
          "[unit]") {
  Bench b;
  b.confirm(7, "mailer", b.now);
  b.confirm(7, "audit", b.now + milliseconds(500));
  CHECK_FALSE(b.writer.ledger().tracks(7));  // nothing but the note of the first until it is due
  CHECK(b.writer.next_due() == b.now + milliseconds(1000));
  b.write(b.now + milliseconds(1000));
  REQUIRE(b.upstream.published.size() == 1);
  CHECK(b.upstream.published[0].payload == R"({"confirmed":["audit","mailer"]})");
  // Tracked now: a further confirmation is told at once, and written an interval after it.
  b.confirm(7, "billing", b.now + milliseconds(1200));
  CHECK(b.writer.ledger().confirmed_before(7) == std::vector<std::string>{"audit", "billing", "mailer"});
  // A first confirmation whose message is settled before its interval costs no write.
  b.confirm(8, "audit", b.now);
  b.settle(8, b.now + milliseconds(10));
  b.writer.on_published(b.upstream.published[0].id, b.stored(), b.now + milliseconds(1300));
  // Made while the put was in flight: it goes an interval after the answer.
  b.write(b.now + milliseconds(2299));
  CHECK(b.upstream.published.size() == 1);
  b.write(b.now + milliseconds(2300));
  REQUIRE(b.upstream.published.size() == 2);
  CHECK(b.upstream.published[1].subject == "$KV.confirmations.mod.7");
  CHECK(b.upstream.published[1].payload == R"({"confirmed":["audit","billing","mailer"]})");
}
