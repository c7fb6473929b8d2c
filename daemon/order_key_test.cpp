#include <catch2/catch.hpp>

#include "order_key.hpp"

using jetfan::order_key;
using jetfan::OrderBy;

TEST_CASE("order key: the key, its Nth token, or a header's first value, and none when it is missing", "[unit]") {
  const OrderBy by_key{OrderBy::Kind::kKey, 0, ""};
  const OrderBy second{OrderBy::Kind::kToken, 2, ""};
  const OrderBy fourth{OrderBy::Kind::kToken, 4, ""};
  const OrderBy entity{OrderBy::Kind::kHeader, 0, "Entity-Id"};
  CHECK(order_key(OrderBy{}, "a.b", "") == std::nullopt);
  CHECK(order_key(by_key, "machine.m7.built", "") == "machine.m7.built");
  CHECK(order_key(second, "machine.m7.built", "") == "m7");
  CHECK(order_key(OrderBy{OrderBy::Kind::kToken, 1, ""}, "machine", "") == "machine");
  CHECK(order_key(OrderBy{OrderBy::Kind::kToken, 3, ""}, "machine.m7.built", "") == "built");
  CHECK(order_key(fourth, "machine.m7.built", "") == std::nullopt);
  CHECK(order_key(second, "a..b", "") == "");  // an empty token is a key like any other
  const std::string block = "NATS/1.0\r\nX-Other: 1\r\nentity-id:  m7 \r\nEntity-Id: later\r\n\r\n";
  CHECK(order_key(entity, "k", block) == "m7");
  CHECK(order_key(entity, "k", "") == std::nullopt);
  CHECK(order_key(entity, "k", "NATS/1.0\r\nX-Other: 1\r\n\r\n") == std::nullopt);
  CHECK(order_key(entity, "k", "NATS/1.0\r\nEntity-Id") == std::nullopt);  // cut short: no crash, no key
}
