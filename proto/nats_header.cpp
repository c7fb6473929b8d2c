#include "nats_header.hpp"

namespace jetfan::proto {
namespace {

bool blank(char c) { return c == ' ' || c == '\t'; }

std::string_view trim(std::string_view text) {
  while (!text.empty() && blank(text.front())) text.remove_prefix(1);
  while (!text.empty() && blank(text.back())) text.remove_suffix(1);
  return text;
}

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool same_name(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

// Takes the first line off `rest`, without its line end. False when `rest` is used up.
bool take_line(std::string_view& rest, std::string_view& line) {
  if (rest.empty()) return false;
  const auto end = rest.find('\n');
  line = rest.substr(0, end);
  rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return true;
}

}  // namespace

HeaderFields::HeaderFields(std::string_view block) : rest_(block) {
  std::string_view status;
  take_line(rest_, status);
}

bool HeaderFields::next(HeaderField& out) {
  std::string_view line;
  while (take_line(rest_, line)) {
    if (line.empty()) {
      // The blank line ends the block: whatever follows is not headers.
      rest_ = {};
      return false;
    }
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const auto name = trim(line.substr(0, colon));
    if (name.empty()) continue;
    out = HeaderField{name, trim(line.substr(colon + 1))};
    return true;
  }
  return false;
}

std::optional<std::string_view> find_header(std::string_view block, std::string_view name) {
  if (name.empty()) return std::nullopt;
  HeaderFields fields(block);
  HeaderField field;
  while (fields.next(field)) {
    if (same_name(field.name, name)) return field.value;
  }
  return std::nullopt;
}

}  // namespace jetfan::proto
