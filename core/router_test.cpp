#include <catch2/catch.hpp>

#include "router.hpp"

namespace {

using jetfan::HandlerMask;
using jetfan::OrderBy;
using jetfan::OrderKey;
using jetfan::RoutedHandler;
using jetfan::Router;

// A stand-in for proto::find_header: the block is "Name=value;..." here, which is all a test of the
// routing step needs (the header block's own reading is proto/nats_header's, tested there).
std::optional<std::string_view> lookup(std::string_view block, std::string_view name) {
  while (!block.empty()) {
    const auto end = block.find(';');
    const std::string_view field = block.substr(0, end);
    const auto eq = field.find('=');
    if (eq != std::string_view::npos && field.substr(0, eq) == name) return field.substr(eq + 1);
    if (end == std::string_view::npos) break;
    block.remove_prefix(end + 1);
  }
  return std::nullopt;
}

HandlerMask bit(std::size_t handler) { return HandlerMask{1} << handler; }

}  // namespace

TEST_CASE("router: recipients are the handlers whose patterns match, with no order keys for unordered ones", "[unit]") {
  Router router({{{"machine.*.built", "audit.>"}, {}}, {{"machine.>"}, {}}, {{"other"}, {}}}, lookup);
  std::vector<OrderKey> order;
  const auto route = router.route("machine.m7.built", "", order);
  CHECK(route.recipients == (bit(0) | bit(1)));
  CHECK(route.without_order_key == 0);
  CHECK(order.empty());
  CHECK(router.route("nobody.at.all", "", order).recipients == 0);
  CHECK_FALSE(router.any_ordered());
}

TEST_CASE("router: each ordered recipient gets the message's order key, lowest handler first", "[unit]") {
  Router router({{{"machine.>"}, OrderBy{OrderBy::Kind::kToken, 2, ""}},
                 {{"machine.>"}, {}},
                 {{">"}, OrderBy{OrderBy::Kind::kHeader, 0, "Entity-Id"}},
                 {{"audit.>"}, OrderBy{OrderBy::Kind::kKey, 0, ""}}},
                lookup);
  CHECK(router.any_ordered());
  CHECK(router.ordered(0));
  CHECK_FALSE(router.ordered(1));
  std::vector<OrderKey> order;
  const auto route = router.route("machine.m7.built", "X=1;Entity-Id=e9", order);
  CHECK(route.recipients == (bit(0) | bit(1) | bit(2)));
  CHECK(route.without_order_key == 0);
  REQUIRE(order.size() == 2);
  CHECK(order[0].handler == 0);
  CHECK(order[0].key == "m7");
  CHECK(order[1].handler == 2);
  CHECK(order[1].key == "e9");
}

TEST_CASE("router: an ordered recipient the message has no order key for gets it unordered, and is named", "[unit]") {
  Router router({{{">"}, OrderBy{OrderBy::Kind::kToken, 3, ""}}, {{">"}, OrderBy{OrderBy::Kind::kHeader, 0, "Id"}}},
                lookup);
  std::vector<OrderKey> order;
  const auto route = router.route("a.b", "Other=1", order);
  CHECK(route.recipients == (bit(0) | bit(1)));
  CHECK(route.without_order_key == (bit(0) | bit(1)));
  CHECK(order.empty());
  // Appended to what the caller has: the routing of one message never drops another's keys.
  order.push_back(OrderKey{7, "kept"});
  router.route("a.b.c", "Id=x", order);
  REQUIRE(order.size() == 3);
  CHECK(order[0].key == "kept");
  CHECK(order[1].key == "c");
  CHECK(order[2].key == "x");
}

TEST_CASE("router: the order key is the key, its Nth token, or a header's value, and none when it is missing",
          "[unit]") {
  Router router({{{">"}, OrderBy{}},
                 {{">"}, OrderBy{OrderBy::Kind::kKey, 0, ""}},
                 {{">"}, OrderBy{OrderBy::Kind::kToken, 2, ""}},
                 {{">"}, OrderBy{OrderBy::Kind::kToken, 4, ""}},
                 {{">"}, OrderBy{OrderBy::Kind::kToken, 1, ""}},
                 {{">"}, OrderBy{OrderBy::Kind::kToken, 3, ""}},
                 {{">"}, OrderBy{OrderBy::Kind::kHeader, 0, "Entity-Id"}}},
                lookup);
  CHECK(router.order_key(0, "a.b", "") == std::nullopt);
  CHECK(router.order_key(1, "machine.m7.built", "") == "machine.m7.built");
  CHECK(router.order_key(2, "machine.m7.built", "") == "m7");
  CHECK(router.order_key(4, "machine", "") == "machine");
  CHECK(router.order_key(5, "machine.m7.built", "") == "built");
  CHECK(router.order_key(3, "machine.m7.built", "") == std::nullopt);
  CHECK(router.order_key(2, "a..b", "") == "");  // an empty token is a key like any other
  CHECK(router.order_key(6, "k", "Entity-Id=m7") == "m7");
  CHECK(router.order_key(6, "k", "") == std::nullopt);
  // Whether or not the handler's patterns match: a redriven dead letter has its handler already.
  Router narrow({{{"only.this"}, OrderBy{OrderBy::Kind::kKey, 0, ""}}}, lookup);
  CHECK(narrow.order_key(0, "something.else", "") == "something.else");
}
