// ConfirmationLedger: what is written to the ledger and when (nothing for a message every handler
// confirms within the interval), the bounds on what waits for the server and on memory, failures
// tried again, and records loaded from an earlier run.

#include <catch2/catch.hpp>

#include <algorithm>

#include "confirmation_ledger.hpp"

using namespace jetfan;
using std::chrono::milliseconds;
using Kind = LedgerChange::Kind;
using Names = std::vector<std::string>;

namespace {

const TimePoint t0{std::chrono::hours(1)};

LedgerSettings settings(std::size_t max_in_flight = 64, std::size_t max_records = 100) {
  LedgerSettings s;
  s.interval = milliseconds(1000);
  s.max_in_flight = max_in_flight;
  s.max_records = max_records;
  return s;
}

}  // namespace

TEST_CASE("ledger: a message every handler confirms within the interval is never written", "[unit]") {
  ConfirmationLedger ledger(settings());
  ledger.confirmed(7, "audit", t0);
  CHECK(ledger.tracked() == 1);
  ledger.settled(7, t0 + milliseconds(500));
  CHECK(ledger.tracked() == 0);
  CHECK(ledger.take_due(t0 + milliseconds(5000)).empty());
  CHECK_FALSE(ledger.next_due());
  ledger.settled(8, t0);  // one handler: never confirmed here at all
  CHECK(ledger.counts().puts == 0);
}

TEST_CASE("ledger: partly confirmed past the interval is put, put again when another confirms, deleted once settled",
          "[unit]") {
  ConfirmationLedger ledger(settings());
  ledger.confirmed(7, "mailer", t0);
  ledger.confirmed(7, "mailer", t0 + milliseconds(10));  // the same handler again: no change
  CHECK(ledger.next_due() == t0 + milliseconds(1000));
  CHECK(ledger.take_due(t0 + milliseconds(999)).empty());
  auto changes = ledger.take_due(t0 + milliseconds(1000));
  REQUIRE(changes.size() == 1);
  CHECK(changes[0].kind == Kind::kPut);
  CHECK(changes[0].seq == 7);
  CHECK(changes[0].handlers == Names{"mailer"});
  CHECK(ledger.waiting_for_server() == 1);
  ledger.written(changes[0], true, t0 + milliseconds(1010));
  CHECK(ledger.counts().puts == 1);
  CHECK(ledger.take_due(t0 + milliseconds(9000)).empty());  // the bucket holds what there is

  ledger.confirmed(7, "audit", t0 + milliseconds(1500));
  CHECK(ledger.confirmed_before(7) == Names{"audit", "mailer"});
  changes = ledger.take_due(t0 + milliseconds(2500));
  REQUIRE(changes.size() == 1);
  CHECK(changes[0].handlers == Names{"audit", "mailer"});
  ledger.written(changes[0], true, t0 + milliseconds(2510));

  ledger.settled(7, t0 + milliseconds(3000));
  CHECK(ledger.take_due(t0 + milliseconds(3999)).empty());
  changes = ledger.take_due(t0 + milliseconds(4000));
  REQUIRE(changes.size() == 1);
  CHECK(changes[0].kind == Kind::kDelete);
  ledger.written(changes[0], true, t0 + milliseconds(4010));
  CHECK(ledger.tracked() == 0);
  CHECK(ledger.counts().deletes == 1);
  CHECK(ledger.counts().puts == 2);
}

TEST_CASE("ledger: a change the server did not take is tried again an interval later", "[unit]") {
  ConfirmationLedger ledger(settings());
  ledger.confirmed(7, "mailer", t0);
  auto changes = ledger.take_due(t0 + milliseconds(1000));
  REQUIRE(changes.size() == 1);
  ledger.written(changes[0], false, t0 + milliseconds(1100));
  CHECK(ledger.counts().failed == 1);
  CHECK(ledger.take_due(t0 + milliseconds(2099)).empty());
  changes = ledger.take_due(t0 + milliseconds(2100));
  REQUIRE(changes.size() == 1);
  CHECK(changes[0].kind == Kind::kPut);
  ledger.written(changes[0], true, t0 + milliseconds(2200));
  ledger.settled(7, t0 + milliseconds(3000));
  changes = ledger.take_due(t0 + milliseconds(4000));
  REQUIRE(changes.size() == 1);
  ledger.written(changes[0], false, t0 + milliseconds(4100));  // a failed delete too
  changes = ledger.take_due(t0 + milliseconds(5100));
  REQUIRE(changes.size() == 1);
  CHECK(changes[0].kind == Kind::kDelete);
}

TEST_CASE("ledger: no more than max_in_flight changes wait for the server", "[unit]") {
  ConfirmationLedger ledger(settings(2));
  for (std::uint64_t seq = 1; seq <= 3; ++seq) ledger.confirmed(seq, "mailer", t0);
  auto changes = ledger.take_due(t0 + milliseconds(1000));
  CHECK(changes.size() == 2);
  CHECK_FALSE(ledger.next_due());  // the third waits for an answer, not for time
  ledger.written(changes[0], true, t0 + milliseconds(1100));
  CHECK(ledger.next_due() == t0 + milliseconds(1000));
  const auto more = ledger.take_due(t0 + milliseconds(1100));
  REQUIRE(more.size() == 1);
  CHECK(more[0].seq == 3);
}

TEST_CASE("ledger: a message settled while its put waits for the server is deleted after the put", "[unit]") {
  ConfirmationLedger ledger(settings());
  ledger.confirmed(7, "mailer", t0);
  auto changes = ledger.take_due(t0 + milliseconds(1000));
  REQUIRE(changes.size() == 1);
  ledger.settled(7, t0 + milliseconds(1001));
  CHECK(ledger.take_due(t0 + milliseconds(9000)).empty());  // nothing while the put waits
  ledger.written(changes[0], true, t0 + milliseconds(1100));
  changes = ledger.take_due(t0 + milliseconds(2100));
  REQUIRE(changes.size() == 1);
  CHECK(changes[0].kind == Kind::kDelete);

  SECTION("and a put that failed is not retried for a settled message, whose record may exist") {
    ConfirmationLedger other(settings());
    other.confirmed(8, "mailer", t0);
    auto puts = other.take_due(t0 + milliseconds(1000));
    other.settled(8, t0 + milliseconds(1001));
    other.written(puts[0], false, t0 + milliseconds(1100));
    const auto next = other.take_due(t0 + milliseconds(2100));
    // The put may have been stored though its answer was lost: it is deleted only if known stored.
    CHECK(next.empty());
    CHECK(other.tracked() == 0);
  }
}

TEST_CASE(
    "ledger: records of an earlier run are named to arrivals, rewritten with new confirmations, deleted once "
    "settled",
    "[unit]") {
  ConfirmationLedger ledger(settings());
  ledger.load(7, {"mailer", "audit"});
  ledger.load(9, {"audit"});
  ledger.load(3, {"audit"});
  CHECK(ledger.counts().loaded == 3);
  CHECK(ledger.confirmed_before(7) == Names{"audit", "mailer"});
  CHECK(ledger.confirmed_before(8).empty());

  ledger.confirmed(7, "billing", t0);
  auto changes = ledger.take_due(t0 + milliseconds(1000));
  REQUIRE(changes.size() == 1);
  CHECK(changes[0].handlers == Names{"audit", "billing", "mailer"});

  ledger.settled(9, t0);  // loaded, never confirmed in this run: its record goes
  changes = ledger.take_due(t0 + milliseconds(1000));
  REQUIRE(changes.size() == 1);
  CHECK(changes[0].kind == Kind::kDelete);
  CHECK(changes[0].seq == 9);

  ledger.forget_below(4);
  CHECK(ledger.confirmed_before(3).empty());
}

TEST_CASE("ledger: past max_records, or past its number of names, a confirmation is dropped and counted", "[unit]") {
  ConfirmationLedger ledger(settings(64, 2));
  ledger.confirmed(1, "a", t0);
  ledger.confirmed(2, "a", t0);
  ledger.confirmed(3, "a", t0);
  CHECK(ledger.tracked() == 2);
  CHECK(ledger.counts().dropped == 1);
  ledger.confirmed(1, "b", t0);  // a message already tracked takes another handler
  CHECK(ledger.confirmed_before(1) == Names{"a", "b"});

  ConfirmationLedger names(settings());
  for (std::size_t i = 0; i < ConfirmationLedger::kMaxNames + 1; ++i) names.confirmed(1, "h" + std::to_string(i), t0);
  CHECK(names.counts().dropped == 1);
  CHECK(names.confirmed_before(1).size() == ConfirmationLedger::kMaxNames);
}

TEST_CASE("ledger: as jetfan stops, every queued change goes, due or not and past max_in_flight, puts first",
          "[unit]") {
  ConfirmationLedger ledger(settings(1));
  ledger.load(3, {"audit"});
  ledger.settled(3, t0);             // a delete, queued first
  ledger.confirmed(7, "audit", t0);  // due at t0 + 1 s
  ledger.confirmed(8, "mailer", t0 + milliseconds(500));
  ledger.confirmed(9, "audit", t0);
  ledger.settled(9, t0);  // never written: forgotten, nothing to send
  const auto all = ledger.take_all();
  REQUIRE(all.size() == 3);
  CHECK(all[0].kind == Kind::kPut);
  CHECK(all[1].kind == Kind::kPut);
  CHECK(std::min(all[0].seq, all[1].seq) == 7);
  CHECK(std::max(all[0].seq, all[1].seq) == 8);
  CHECK((all[0].seq == 8 ? all[0] : all[1]).handlers == Names{"mailer"});
  CHECK(all[2].kind == Kind::kDelete);
  CHECK(all[2].seq == 3);
  CHECK(ledger.tracked() == 0);
  CHECK(ledger.take_all().empty());
  CHECK_FALSE(ledger.next_due());
}

TEST_CASE("ledger: a confirmation handed on late is due an interval after it was made, before later ones", "[unit]") {
  ConfirmationLedger ledger(settings());
  ledger.confirmed(5, "audit", t0 + milliseconds(900));  // due at t0 + 1.9 s
  CHECK_FALSE(ledger.tracks(4));
  CHECK(ledger.tracks(5));
  ledger.confirmed(4, "audit", t0);  // told only now, made at t0: due at t0 + 1 s
  CHECK(ledger.next_due() == t0 + milliseconds(1000));
  const auto first = ledger.take_due(t0 + milliseconds(1000));
  REQUIRE(first.size() == 1);
  CHECK(first[0].seq == 4);
  CHECK(ledger.take_due(t0 + milliseconds(1899)).empty());
  CHECK(ledger.take_due(t0 + milliseconds(1900)).size() == 1);
}
