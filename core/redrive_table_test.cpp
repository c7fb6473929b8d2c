// RedriveTable on its own: the key scheme that keeps redrives apart from the stream's sequences, and
// the entries' lifetime. dispatch_core_redrive_test.cpp shows the core serving them (R41-R43).

#include "redrive_table.hpp"

#include <catch2/catch.hpp>

using namespace jetfan;

TEST_CASE("redrive table: a redrive's key is above every stream sequence and gives its id back", "[unit]") {
  const std::uint64_t key = RedriveTable::key_of(42);
  CHECK(RedriveTable::is_redrive(key));
  CHECK(RedriveTable::id_of(key) == 42);
  CHECK(key > (std::uint64_t{1} << 62));
  CHECK(!RedriveTable::is_redrive(42));
  CHECK(!RedriveTable::is_redrive((std::uint64_t{1} << 63) - 1));  // the highest a stream could number
  CHECK(!RedriveTable::valid_id(0));
  CHECK(!RedriveTable::valid_id(key));
  CHECK(RedriveTable::valid_id(1));
}

TEST_CASE("redrive table: an entry is added, marked dead-lettered again, and taken once", "[unit]") {
  RedriveTable table;
  table.add(7);
  table.add(9);
  CHECK(table.size() == 2);
  table.dead_lettered(RedriveTable::key_of(9));
  table.dead_lettered(RedriveTable::key_of(8));  // not held: nothing
  table.dead_lettered(9);                        // a stream sequence, not a key: nothing
  const auto seven = table.take(RedriveTable::key_of(7));
  REQUIRE(seven);
  CHECK(seven->id == 7);
  CHECK(!seven->again);
  const auto nine = table.take(RedriveTable::key_of(9));
  REQUIRE(nine);
  CHECK(nine->again);
  CHECK(!table.take(RedriveTable::key_of(9)));
  CHECK(table.size() == 0);
}
