#include "order_key.hpp"

#include "nats_header.hpp"

namespace jetfan {

std::optional<std::string_view> order_key(const OrderBy& order_by, std::string_view key, std::string_view headers) {
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
      return proto::find_header(headers, order_by.header);
  }
  return std::nullopt;
}

}  // namespace jetfan
