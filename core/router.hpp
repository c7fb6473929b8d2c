#pragma once
// Router: the routing step. Which declared handlers a message is for (their topic patterns against
// the message's key, TopicMatcher), and for each ordered one among them (OrderBy) the message's
// order key: the key itself, one of its tokens, or a header's value. Computed once when a message
// arrives and fixed from then on (docs/dispatch-rules.md, "Ordered handlers"); the same step gives
// the order keys of what an earlier reader left outstanding after a restart, and of a redriven
// dead letter.
//
// Pure: no I/O, no clock. The header block is read through a HeaderLookup the caller gives
// (proto::find_header in the daemon), so the core does not depend on the wire's reader.
// Thread: one owner (the dispatcher's io_context thread). Not thread-safe: match() caches.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "order_by.hpp"
#include "order_gate.hpp"
#include "topic_pattern.hpp"

namespace jetfan {

// One declared handler, as routing sees it.
struct RoutedHandler {
  std::vector<std::string> patterns;  // each valid (pattern_error() is nullopt)
  OrderBy order_by;
};

// The recipients of one message.
struct Route {
  HandlerMask recipients = 0;
  // Ordered recipients the message has no order key for (order_by token:N past its last token, or
  // header:NAME missing): they get it unordered, and the caller counts it.
  HandlerMask without_order_key = 0;
};

class Router {
 public:
  // The value of the first header named `name` in a NATS/1.0 header block, or nullopt; the result
  // points into `block`.
  using HeaderLookup = std::optional<std::string_view> (*)(std::string_view block, std::string_view name);

  // Preconditions: handlers.size() <= kMaxHandlers; every pattern valid; lookup not null.
  Router(const std::vector<RoutedHandler>& handlers, HeaderLookup lookup);

  // The handlers a message with `key` and header block `headers` (or empty) is for. For each ordered
  // recipient with an order key, appends {handler, order key} to `order`, lowest handler first.
  Route route(std::string_view key, std::string_view headers, std::vector<OrderKey>& order);

  // The order key of a message for `handler`, whether or not its patterns match: nullopt when the
  // handler is unordered or the message has none (see Route::without_order_key). Points into `key`
  // or `headers`. Precondition: handler < handler_count().
  std::optional<std::string_view> order_key(std::size_t handler, std::string_view key, std::string_view headers) const;

  std::size_t handler_count() const { return order_by_.size(); }
  bool ordered(std::size_t handler) const { return (ordered_ & bit(handler)) != 0; }
  bool any_ordered() const { return ordered_ != 0; }
  const OrderBy& order_by(std::size_t handler) const { return order_by_[handler]; }

 private:
  static HandlerMask bit(std::size_t handler) { return HandlerMask{1} << handler; }

  TopicMatcher matcher_;
  std::vector<OrderBy> order_by_;
  HandlerMask ordered_ = 0;
  HeaderLookup lookup_;
};

}  // namespace jetfan
