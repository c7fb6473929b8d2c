#include <catch2/catch.hpp>

#include "duplicate_window.hpp"

using namespace jetfan;
using std::chrono::minutes;
using std::chrono::seconds;

TEST_CASE("duplicate window: AckWait x the fewer of MaxDeliver and max_attempts, none: unbounded", "[unit]") {
  DuplicateWindowFacts facts{"builder", "OUT", minutes(2), seconds(30), 5, 0};
  CHECK(redelivery_span(facts) == seconds(150));
  facts.max_attempts = 3;
  CHECK(redelivery_span(facts) == seconds(90));
  facts.max_deliver = -1;
  CHECK(redelivery_span(facts) == seconds(90));
  facts.max_attempts = 0;
  CHECK_FALSE(redelivery_span(facts));
}

TEST_CASE("duplicate window: long enough is quiet, short or unbounded is a warning saying what to set", "[unit]") {
  DuplicateWindowFacts facts{"builder", "OUT", minutes(2), seconds(30), 4, 0};
  CHECK_FALSE(duplicate_window_problem(facts));  // 2m = 30s x 4
  facts.max_deliver = 5;
  const auto short_window = duplicate_window_problem(facts);
  REQUIRE(short_window);
  CHECK_THAT(*short_window, Catch::Contains("handler \"builder\" publishes to stream \"OUT\", whose duplicate_window "
                                            "2m is shorter than AckWait 30s x 5 deliveries = 2m30s"));
  CHECK_THAT(*short_window, Catch::Contains("at least 2m30s"));
  facts.max_deliver = -1;
  const auto unbounded = duplicate_window_problem(facts);
  REQUIRE(unbounded);
  CHECK_THAT(*unbounded, Catch::Contains("without end"));
}
