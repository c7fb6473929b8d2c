// AckFloor on its own: what goes out once the floor passes a settled message (R17), the trimming of
// those that wait (R18), the ceiling that holds it (R19), copies, keepalives and the end of a
// drain. dispatch_core_ack_floor_test.cpp and dispatch_core_gap_test.cpp show the core holding it.

#include "ack_floor.hpp"

#include <catch2/catch.hpp>
#include <string>

using namespace jetfan;
using std::chrono::milliseconds;
using Kind = Effect::Kind;
using Effects = AckFloor::Effects;

namespace {

const TimePoint kStart{};
constexpr std::uint64_t kAll = AckFloor::kNoCeiling;

// What `out` says, as "verb message" in order (a -NAK with its delay), and `out` emptied: so that a
// failure shows what went out.
std::string take(Effects& out) {
  std::string said;
  for (const Effect& e : out) {
    if (!said.empty()) said += ", ";
    switch (e.kind) {
      case Kind::kAck:
        said += "ack";
        break;
      case Kind::kTerm:
        said += "term";
        break;
      case Kind::kNak:
        said += "nak(" + std::to_string(e.delay.count()) + "ms)";
        break;
      case Kind::kWip:
        said += "wip";
        break;
      case Kind::kRelease:
        said += "release";
        break;
      case Kind::kTrim:
        said += "trim";
        break;
      default:
        said += "?";
        break;
    }
    said += " " + std::to_string(e.message);
  }
  out.clear();
  return said;
}

}  // namespace

TEST_CASE("ack floor: the highest settled below the lowest unsettled is acked once and all below it released",
          "[unit]") {
  AckFloor floor(std::pmr::new_delete_resource());
  Effects out;
  for (std::uint64_t seq = 1; seq <= 4; ++seq) floor.held(seq);
  CHECK(floor.unsettled() == 4);
  floor.settle(2, 20, false, kStart, kAll, out);
  floor.settle(3, 30, false, kStart, kAll, out);
  CHECK(take(out) == "trim 20, trim 30");  // 1 is not settled
  CHECK(floor.waiting() == 2);
  floor.settle(1, 10, false, kStart, kAll, out);
  CHECK(take(out) == "ack 30, release 10, release 20, release 30");
  CHECK(floor.waiting() == 0);
  CHECK(floor.unsettled() == 1);  // 4
  floor.settle(4, 40, false, kStart, kAll, out);
  CHECK(take(out) == "ack 40, release 40");  // nothing below: at once
}

TEST_CASE("ack floor: each terminated one gets its TERM in order and a terminated highest gets no ACK", "[unit]") {
  AckFloor floor(std::pmr::new_delete_resource());
  Effects out;
  for (std::uint64_t seq = 1; seq <= 3; ++seq) floor.held(seq);
  floor.settle(2, 20, true, kStart, kAll, out);
  floor.settle(3, 30, false, kStart, kAll, out);
  take(out);
  floor.settle(1, 10, true, kStart, kAll, out);
  CHECK(take(out) == "term 10, term 20, ack 30, release 10, release 20, release 30");

  for (std::uint64_t seq = 4; seq <= 5; ++seq) floor.held(seq);
  floor.settle(5, 50, true, kStart, kAll, out);
  take(out);
  floor.settle(4, 40, false, kStart, kAll, out);
  // The +TERM of 5 settles 4 at the server as well.
  CHECK(take(out) == "term 50, release 40, release 50");
}

TEST_CASE("ack floor: nothing at or above the ceiling goes out until the ceiling rises", "[unit]") {
  AckFloor floor(std::pmr::new_delete_resource());
  Effects out;
  floor.settle(5, 50, false, kStart, 5, out);  // a gap may have lost what lies above 4
  CHECK(take(out) == "trim 50");
  floor.settle(3, 30, false, kStart, 5, out);
  CHECK(take(out) == "ack 30, release 30");
  floor.settle(7, 70, false, kStart, 0, out);  // held outright: after a restart
  CHECK(take(out) == "trim 70");
  floor.advance(0, out);
  CHECK(out.empty());
  floor.advance(6, out);
  CHECK(take(out) == "ack 50, release 50");
  floor.advance(kAll, out);
  CHECK(take(out) == "ack 70, release 70");
  CHECK(floor.waiting() == 0);
}

TEST_CASE("ack floor: one the server will not deliver again no longer holds the floor", "[unit]") {
  AckFloor floor(std::pmr::new_delete_resource());
  Effects out;
  floor.held(1);
  floor.held(2);
  floor.settle(2, 20, false, kStart, kAll, out);
  take(out);
  floor.gone(1, 0, out);  // while the floor is held, nothing yet
  CHECK(out.empty());
  CHECK(floor.unsettled() == 0);
  floor.advance(kAll, out);
  CHECK(take(out) == "ack 20, release 20");
}

TEST_CASE("ack floor: a copy of a waiting message is answered on the new copy", "[unit]") {
  AckFloor floor(std::pmr::new_delete_resource());
  Effects out;
  CHECK_FALSE(floor.copy(2, 21, kStart, out));  // none waits
  floor.held(1);
  floor.settle(2, 20, false, kStart, kAll, out);
  take(out);
  CHECK_FALSE(floor.copy(1, 11, kStart, out));  // held, not waiting: the caller's
  CHECK(out.empty());
  CHECK(floor.copy(2, 21, kStart, out));
  CHECK(take(out) == "release 20, trim 21");
  CHECK(floor.waiting() == 1);
  floor.gone(1, kAll, out);
  CHECK(take(out) == "ack 21, release 21");
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
  Effects out;
  floor.held(1);
  floor.settle(2, 20, false, kStart, kAll, out);
  floor.settle(3, 30, true, kStart + milliseconds(300), kAll, out);
  take(out);
  floor.touch(kStart + milliseconds(100), kStart + milliseconds(600), out);
  CHECK(take(out) == "wip 20");
  floor.touch(kStart + milliseconds(300), kStart + milliseconds(800), out);
  CHECK(take(out) == "wip 30");  // 2 was touched at 600 ms
  floor.abandon(milliseconds(250), out);
  CHECK(take(out) == "nak(250ms) 20, release 20, nak(250ms) 30, release 30");
  CHECK(floor.waiting() == 0);
  CHECK(floor.unsettled() == 1);  // 1 is the caller's to hand back
}
