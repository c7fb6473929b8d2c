#include "router.hpp"

#include <bit>

namespace jetfan {

Router::Router(const std::vector<RoutedHandler>& handlers, HeaderLookup lookup) : lookup_(lookup) {
  order_by_.reserve(handlers.size());
  for (std::size_t h = 0; h < handlers.size(); ++h) {
    for (const auto& pattern : handlers[h].patterns) matcher_.add(pattern, h);
    order_by_.push_back(handlers[h].order_by);
    if (handlers[h].order_by.kind != OrderBy::Kind::kNone) ordered_ |= bit(h);
  }
}

Route Router::route(std::string_view key, std::string_view headers, std::vector<OrderKey>& order) {
  Route route;
  route.recipients = matcher_.match(key);
  // Most messages have no ordered recipient: one mask test, and no walk over the handlers.
  for (HandlerMask left = route.recipients & ordered_; left != 0; left &= left - 1) {
    const auto h = static_cast<std::size_t>(std::countr_zero(left));
    if (const auto found = order_key(h, key, headers)) {
      order.push_back(OrderKey{h, std::string(*found)});
    } else {
      route.without_order_key |= bit(h);
    }
  }
  return route;
}

std::optional<std::string_view> Router::order_key(std::size_t handler, std::string_view key,
                                                  std::string_view headers) const {
  const OrderBy& order_by = order_by_[handler];
  switch (order_by.kind) {
    case OrderBy::Kind::kNone:
      return std::nullopt;
    case OrderBy::Kind::kKey:
      return key;
    case OrderBy::Kind::kToken: {
      std::size_t start = 0;
      for (std::size_t token = 1;; ++token) {
        const auto dot = key.find('.', start);
        if (token == order_by.token) return key.substr(start, dot == std::string_view::npos ? dot : dot - start);
        if (dot == std::string_view::npos) return std::nullopt;
        start = dot + 1;
      }
    }
    case OrderBy::Kind::kHeader:
      return lookup_(headers, order_by.header);
  }
  return std::nullopt;
}

}  // namespace jetfan
