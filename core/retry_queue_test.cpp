// RetryQueue on its own: entries come due in time order, and a reload renumbers or drops them.

#include "retry_queue.hpp"

#include <catch2/catch.hpp>

using namespace jetfan;
using std::chrono::milliseconds;

namespace {
const TimePoint kStart{};
}

TEST_CASE("retry queue: entries come due in time order, once, and next() says when", "[unit]") {
  RetryQueue queue;
  CHECK(!queue.next());
  queue.schedule(kStart + milliseconds(200), 1, 10);
  queue.schedule(kStart + milliseconds(100), 0, 11);
  queue.schedule(kStart + milliseconds(200), 2, 12);
  CHECK(queue.next() == kStart + milliseconds(100));
  CHECK(queue.take_due(kStart + milliseconds(99)).empty());
  auto due = queue.take_due(kStart + milliseconds(100));
  REQUIRE(due.size() == 1);
  CHECK(due[0].handler == 0);
  CHECK(due[0].key == 11);
  due = queue.take_due(kStart + milliseconds(500));
  REQUIRE(due.size() == 2);
  CHECK(due[0].key == 10);  // scheduled first for the same time
  CHECK(due[1].key == 12);
  CHECK(queue.size() == 0);
  CHECK(!queue.next());
}

TEST_CASE("retry queue: a reload moves each entry to its handler's new index and drops a removed one's", "[unit]") {
  RetryQueue queue;
  queue.schedule(kStart, 0, 1);
  queue.schedule(kStart, 1, 2);
  queue.schedule(kStart, 2, 3);
  queue.reindex({std::size_t{1}, std::nullopt, std::size_t{0}});
  const auto due = queue.take_due(kStart);
  REQUIRE(due.size() == 2);
  CHECK(due[0].handler == 1);
  CHECK(due[0].key == 1);
  CHECK(due[1].handler == 0);
  CHECK(due[1].key == 3);
}
