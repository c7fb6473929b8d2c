#include "nats_headers.hpp"

namespace jetfan {
namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) text.remove_suffix(1);
  return text;
}

bool same_name(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

}  // namespace

HeaderList parse_headers(std::string_view block) {
  HeaderList headers;
  bool status_line = true;  // the first line is "NATS/1.0" with an optional status code
  while (!block.empty()) {
    const auto end = block.find('\n');
    std::string_view line = block.substr(0, end);
    block.remove_prefix(end == std::string_view::npos ? block.size() : end + 1);
    if (status_line) {
      status_line = false;
      continue;
    }
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;  // the blank line at the end, or junk
    const auto name = trim(line.substr(0, colon));
    if (name.empty()) continue;
    headers.emplace_back(std::string(name), std::string(trim(line.substr(colon + 1))));
  }
  return headers;
}

const std::string* find_header(const HeaderList& headers, std::string_view name) {
  for (const auto& [key, value] : headers) {
    if (same_name(key, name)) return &value;
  }
  return nullptr;
}

}  // namespace jetfan
