// HandlerRenumbering on its own: a reload's new handler indices applied to masks (R36).
// dispatch_core_reconfigure_test.cpp shows the core applying them to what it holds.

#include "handler_renumbering.hpp"

#include <catch2/catch.hpp>

using namespace jetfan;

TEST_CASE("handler renumbering: each bit moves to its new index and a removed handler's bit goes", "[unit]") {
  const HandlerRenumbering renumbering({std::size_t{2}, std::nullopt, std::size_t{0}});
  CHECK(renumbering.old_count() == 3);
  CHECK(renumbering.removed() == 0b010);
  CHECK(renumbering.mask(0b001) == 0b100);
  CHECK(renumbering.mask(0b100) == 0b001);
  CHECK(renumbering.mask(0b010) == 0);
  CHECK(renumbering.mask(0b111) == 0b101);
  CHECK(renumbering.mask(0) == 0);
  CHECK(renumbering.mask(0b1000) == 0);  // beyond the old table
}

TEST_CASE("handler renumbering: all 64 handlers and added ones", "[unit]") {
  std::vector<std::optional<std::size_t>> old_to_new(kMaxHandlers);
  for (std::size_t h = 0; h < kMaxHandlers; ++h) old_to_new[h] = h;
  old_to_new[0] = kMaxHandlers - 1;
  old_to_new[kMaxHandlers - 1] = 0;
  const HandlerRenumbering swapped(old_to_new);
  CHECK(swapped.removed() == 0);
  CHECK(swapped.mask(HandlerMask{1}) == HandlerMask{1} << 63);
  CHECK(swapped.mask(HandlerMask{1} << 63) == HandlerMask{1});
  CHECK(swapped.mask(~HandlerMask{0}) == ~HandlerMask{0});
  CHECK(swapped.mask(0b110) == 0b110);

  // Two handlers become the last two of four; the first two new ones are added.
  const HandlerRenumbering grown({std::size_t{2}, std::size_t{3}});
  CHECK(grown.removed() == 0);
  CHECK(grown.mask(0b11) == 0b1100);
}
