// AckFloor on its own: what goes out once the floor passes a settled message (R17), the trimming of
// those that wait (R18), the ceiling that holds it (R19), copies, keepalives and the end of a
// drain. dispatch_core_ack_floor_test.cpp and dispatch_core_gap_test.cpp show the core holding it.

#include "ack_floor.hpp"

#include <catch2/catch.hpp>

using namespace jetfan;
using std::chrono::milliseconds;
using Verb = AckFloor::Step::Verb;
using Steps = AckFloor::Steps;

namespace {

const TimePoint kStart{};
constexpr std::uint64_t kAll = AckFloor::kNoCeiling;

AckFloor::Step step(Verb verb, AckFloor::Handle handle) { return AckFloor::Step{verb, handle}; }

// The steps in `out`, taken: `out` is empty afterwards.
Steps take(Steps& out) {
  Steps taken;
  taken.swap(out);
  return taken;
}

}  // namespace

TEST_CASE("ack floor: the highest settled below the lowest unsettled is acked once and all below it released",
          "[unit]") {
  AckFloor floor(std::pmr::new_delete_resource());
  Steps out;
  for (std::uint64_t seq = 1; seq <= 4; ++seq) floor.held(seq);
  CHECK(floor.unsettled() == 4);
  floor.settle(2, 20, false, kStart, kAll, out);
  floor.settle(3, 30, false, kStart, kAll, out);
  CHECK(take(out) == Steps{step(Verb::kTrim, 20), step(Verb::kTrim, 30)});  // 1 is not settled
  CHECK(floor.waiting() == 2);
  floor.settle(1, 10, false, kStart, kAll, out);
  CHECK(take(out) ==
        Steps{step(Verb::kAck, 30), step(Verb::kRelease, 10), step(Verb::kRelease, 20), step(Verb::kRelease, 30)});
  CHECK(floor.waiting() == 0);
  CHECK(floor.unsettled() == 1);  // 4
  floor.settle(4, 40, false, kStart, kAll, out);
  CHECK(take(out) == Steps{step(Verb::kAck, 40), step(Verb::kRelease, 40)});  // nothing below: at once
}

TEST_CASE("ack floor: each terminated one gets its TERM in order and a terminated highest gets no ACK", "[unit]") {
  AckFloor floor(std::pmr::new_delete_resource());
  Steps out;
  for (std::uint64_t seq = 1; seq <= 3; ++seq) floor.held(seq);
  floor.settle(2, 20, true, kStart, kAll, out);
  floor.settle(3, 30, false, kStart, kAll, out);
  take(out);
  floor.settle(1, 10, true, kStart, kAll, out);
  CHECK(take(out) == Steps{step(Verb::kTerm, 10), step(Verb::kTerm, 20), step(Verb::kAck, 30), step(Verb::kRelease, 10),
                           step(Verb::kRelease, 20), step(Verb::kRelease, 30)});

  for (std::uint64_t seq = 4; seq <= 5; ++seq) floor.held(seq);
  floor.settle(5, 50, true, kStart, kAll, out);
  take(out);
  floor.settle(4, 40, false, kStart, kAll, out);
  // The +TERM of 5 settles 4 at the server as well.
  CHECK(take(out) == Steps{step(Verb::kTerm, 50), step(Verb::kRelease, 40), step(Verb::kRelease, 50)});
}

TEST_CASE("ack floor: nothing at or above the ceiling goes out until the ceiling rises", "[unit]") {
  AckFloor floor(std::pmr::new_delete_resource());
  Steps out;
  floor.settle(5, 50, false, kStart, 5, out);  // a gap may have lost what lies above 4
  CHECK(take(out) == Steps{step(Verb::kTrim, 50)});
  floor.settle(3, 30, false, kStart, 5, out);
  CHECK(take(out) == Steps{step(Verb::kAck, 30), step(Verb::kRelease, 30)});
  floor.settle(7, 70, false, kStart, 0, out);  // held outright: after a restart
  CHECK(take(out) == Steps{step(Verb::kTrim, 70)});
  floor.advance(0, out);
  CHECK(out.empty());
  floor.advance(6, out);
  CHECK(take(out) == Steps{step(Verb::kAck, 50), step(Verb::kRelease, 50)});
  floor.advance(kAll, out);
  CHECK(take(out) == Steps{step(Verb::kAck, 70), step(Verb::kRelease, 70)});
  CHECK(floor.waiting() == 0);
}

TEST_CASE("ack floor: one the server will not deliver again no longer holds the floor", "[unit]") {
  AckFloor floor(std::pmr::new_delete_resource());
  Steps out;
  floor.held(1);
  floor.held(2);
  floor.settle(2, 20, false, kStart, kAll, out);
  take(out);
  floor.gone(1, 0, out);  // while the floor is held, nothing yet
  CHECK(out.empty());
  CHECK(floor.unsettled() == 0);
  floor.advance(kAll, out);
  CHECK(take(out) == Steps{step(Verb::kAck, 20), step(Verb::kRelease, 20)});
}

TEST_CASE("ack floor: a copy of a waiting message is answered on the new copy", "[unit]") {
  AckFloor floor(std::pmr::new_delete_resource());
  Steps out;
  CHECK_FALSE(floor.copy(2, 21, kStart, out));  // none waits
  floor.held(1);
  floor.settle(2, 20, false, kStart, kAll, out);
  take(out);
  CHECK_FALSE(floor.copy(1, 11, kStart, out));  // held, not waiting: the caller's
  CHECK(out.empty());
  CHECK(floor.copy(2, 21, kStart, out));
  CHECK(take(out) == Steps{step(Verb::kRelease, 20), step(Verb::kTrim, 21)});
  CHECK(floor.waiting() == 1);
  floor.gone(1, kAll, out);
  CHECK(take(out) == Steps{step(Verb::kAck, 21), step(Verb::kRelease, 21)});
}

TEST_CASE("ack floor: a copy of one settled earlier waits while it is at or above the ceiling or below it is unsettled",
          "[unit]") {
  AckFloor floor(std::pmr::new_delete_resource());
  CHECK_FALSE(floor.must_wait(5, kAll));
  CHECK(floor.must_wait(5, 0));
  CHECK(floor.must_wait(5, 5));
  CHECK_FALSE(floor.must_wait(4, 5));
  floor.held(3);
  CHECK(floor.must_wait(5, kAll));
  CHECK_FALSE(floor.must_wait(2, kAll));
}

TEST_CASE("ack floor: a keepalive touches only the stale ones and a drain hands back all that wait", "[unit]") {
  AckFloor floor(std::pmr::new_delete_resource());
  Steps out;
  floor.held(1);
  floor.settle(2, 20, false, kStart, kAll, out);
  floor.settle(3, 30, true, kStart + milliseconds(300), kAll, out);
  take(out);
  floor.touch(kStart + milliseconds(100), kStart + milliseconds(600), out);
  CHECK(take(out) == Steps{step(Verb::kWip, 20)});
  floor.touch(kStart + milliseconds(300), kStart + milliseconds(800), out);
  CHECK(take(out) == Steps{step(Verb::kWip, 30)});  // 2 was touched at 600 ms
  floor.abandon(out);
  CHECK(take(out) ==
        Steps{step(Verb::kNak, 20), step(Verb::kRelease, 20), step(Verb::kNak, 30), step(Verb::kRelease, 30)});
  CHECK(floor.waiting() == 0);
  CHECK(floor.unsettled() == 1);  // 1 is the caller's to hand back
}
