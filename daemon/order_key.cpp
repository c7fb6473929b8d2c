#include "order_key.hpp"

namespace jetfan {
namespace {

bool same_name(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

std::optional<std::string_view> header_value(std::string_view block, std::string_view name) {
  // The first line is the status line ("NATS/1.0"); the block ends with an empty line.
  const auto first = block.find("\r\n");
  if (first == std::string_view::npos) return std::nullopt;
  block.remove_prefix(first + 2);
  while (!block.empty()) {
    const auto end = block.find("\r\n");
    const std::string_view line = block.substr(0, end);
    if (line.empty()) break;
    const auto colon = line.find(':');
    if (colon != std::string_view::npos && same_name(trim(line.substr(0, colon)), name)) {
      return trim(line.substr(colon + 1));
    }
    if (end == std::string_view::npos) break;
    block.remove_prefix(end + 2);
  }
  return std::nullopt;
}

}  // namespace

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
      return header_value(headers, order_by.header);
  }
  return std::nullopt;
}

}  // namespace jetfan
