// SpentMessages: messages are destroyed only after the turn that spent them, all together, and none
// is left behind, whichever of the drain and the owner goes first (run under ASan, a leak or a
// double destroy fails).

#include <catch2/catch.hpp>

#include <optional>

#include "spent_messages.hpp"

using namespace jetfan;

namespace {

NatsMsgPtr message(const char* subject) {
  REQUIRE(nats_Open(-1) == NATS_OK);  // as jetfan's start does: cnats's collector thread runs
  natsMsg* raw = nullptr;
  REQUIRE(natsMsg_Create(&raw, subject, nullptr, "x", 1) == NATS_OK);
  return NatsMsgPtr(raw);
}

}  // namespace

TEST_CASE("spent messages: destroyed together once the turn is over", "[unit]") {
  boost::asio::io_context io;
  SpentMessages spent(io);
  spent.add(message("a"));
  spent.add(message("b"));
  spent.add(NatsMsgPtr());  // nothing to destroy
  CHECK(spent.waiting() == 2);
  CHECK(io.poll() == 1);  // one drain for the turn
  CHECK(spent.waiting() == 0);
  spent.add(message("c"));
  CHECK(spent.waiting() == 1);
  io.restart();  // poll() ran out of work
  CHECK(io.poll() == 1);
  CHECK(spent.waiting() == 0);
}

TEST_CASE("spent messages: what waits when the owner goes is destroyed then, and the drain finds nothing", "[unit]") {
  boost::asio::io_context io;
  std::optional<SpentMessages> spent(std::in_place, io);
  spent->add(message("a"));
  spent.reset();
  CHECK(io.poll() == 1);
}
