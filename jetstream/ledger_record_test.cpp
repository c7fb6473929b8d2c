// The confirmation ledger's records in their bucket: subjects, values, deletes.

#include <catch2/catch.hpp>

#include "ledger_record.hpp"

using namespace jetfan::jetstream;

TEST_CASE("ledger record: a message's record is key <durable>.<seq> of bucket B, stream KV_B", "[unit]") {
  CHECK(ledger_stream("jetfan_ledger") == "KV_jetfan_ledger");
  CHECK(ledger_subject("jetfan_ledger", "node1_builder", 42) == "$KV.jetfan_ledger.node1_builder.42");
  CHECK(ledger_filter("jetfan_ledger", "node1_builder") == "$KV.jetfan_ledger.node1_builder.>");
  CHECK(ledger_seq_of("$KV.jetfan_ledger.node1_builder.42", "jetfan_ledger", "node1_builder") == 42u);
  CHECK_FALSE(ledger_seq_of("$KV.jetfan_ledger.other.42", "jetfan_ledger", "node1_builder"));
  CHECK_FALSE(ledger_seq_of("$KV.jetfan_ledger.node1_builder.4x", "jetfan_ledger", "node1_builder"));
  CHECK_FALSE(ledger_seq_of("$KV.jetfan_ledger.node1_builder.", "jetfan_ledger", "node1_builder"));
  CHECK_FALSE(ledger_seq_of("$KV.jetfan_ledger.node1_builder.0", "jetfan_ledger", "node1_builder"));
  CHECK(valid_bucket_name("jetfan-ledger_1"));
  CHECK_FALSE(valid_bucket_name(""));
  CHECK_FALSE(valid_bucket_name("a.b"));
  CHECK_FALSE(valid_bucket_name("a b"));
}

TEST_CASE("ledger record: the value names the handlers that confirmed, and reads back", "[unit]") {
  const std::string value = ledger_value({"audit", "mailer"});
  CHECK(value == R"({"confirmed":["audit","mailer"]})");
  CHECK(parse_ledger_value(value) == std::vector<std::string>{"audit", "mailer"});
  CHECK(parse_ledger_value(R"({"confirmed":[]})") == std::vector<std::string>{});
  CHECK_FALSE(parse_ledger_value("not json"));
  CHECK_FALSE(parse_ledger_value(R"({"confirmed":"audit"})"));
  CHECK_FALSE(parse_ledger_value(R"({"confirmed":[1]})"));
  CHECK_FALSE(parse_ledger_value(R"(["audit"])"));
}

TEST_CASE("ledger record: a delete or a purge of the key-value API is told from a record", "[unit]") {
  CHECK(is_ledger_delete(kLedgerDeleteHeaders));
  CHECK(is_ledger_delete("NATS/1.0\r\nKV-Operation: PURGE\r\nNats-Rollup: sub\r\n\r\n"));
  CHECK_FALSE(is_ledger_delete(""));
  CHECK_FALSE(is_ledger_delete("NATS/1.0\r\nTenant: t1\r\n\r\n"));
}
