#include "received_headers.hpp"

namespace jetfan {
namespace {

constexpr std::string_view kVersionLine = "NATS/1.0";

// What cnats strips around a name or a value (C's isspace, less the line ends a line cannot hold).
bool blank(char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f'; }

std::string_view trim(std::string_view text) {
  while (!text.empty() && blank(text.front())) text.remove_prefix(1);
  while (!text.empty() && blank(text.back())) text.remove_suffix(1);
  return text;
}

// A value as a C string holds it: up to its first NUL.
std::string_view up_to_nul(std::string_view text) { return text.substr(0, text.find('\0')); }

bool is_status_field(std::string_view name) { return name == "Status" || name == "Description"; }

}  // namespace

HeaderGap read_header_gap(std::string_view gap) {
  if (gap.empty()) return {};
  if (gap.back() != '\0') return {HeaderGap::Kind::kUnknown, {}};
  const std::string_view block = gap.substr(0, gap.size() - 1);
  if (block.substr(0, kVersionLine.size()) != kVersionLine) return {HeaderGap::Kind::kUnknown, {}};
  const std::size_t line_end = block.find('\n', kVersionLine.size());
  // A block without a line end was never parsed (cnats parses nothing of it).
  if (line_end == std::string_view::npos || block[line_end - 1] == '\r') return {HeaderGap::Kind::kBlock, block};
  if (block[line_end - 1] == '\0') return {HeaderGap::Kind::kParsed, {}};
  return {HeaderGap::Kind::kUnknown, {}};
}

Agreement agrees_with_parse(std::string_view block, const std::vector<ParsedField>& parsed) {
  std::vector<ParsedField> ours;
  std::string_view rest = block;
  const std::size_t first_end = rest.find("\r\n");
  if (first_end == std::string_view::npos) return Agreement::kCannotTell;
  const bool status_line = first_end > kVersionLine.size();
  rest.remove_prefix(first_end + 2);
  for (;;) {
    const std::size_t end = rest.find("\r\n");
    if (end == std::string_view::npos) return Agreement::kCannotTell;  // no blank line ends it
    const std::string_view line = rest.substr(0, end);
    rest.remove_prefix(end + 2);
    if (line.empty()) break;
    if (blank(line.front())) return Agreement::kCannotTell;  // folded onto the line before
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) return Agreement::kCannotTell;
    const std::string_view name = trim(line.substr(0, colon));
    const std::string_view value = trim(up_to_nul(line.substr(colon + 1)));
    if (name.empty() || name.find('\0') != std::string_view::npos || value.empty()) return Agreement::kCannotTell;
    if (status_line && is_status_field(name)) return Agreement::kCannotTell;
    ours.push_back({name, value});
  }
  std::vector<ParsedField> theirs;
  for (const ParsedField& field : parsed) {
    if (status_line && is_status_field(field.name)) continue;
    theirs.push_back({trim(field.name), trim(field.value)});
  }
  if (theirs.size() != ours.size()) return Agreement::kDisagrees;
  // Each name's values in the same order: cnats keeps them so, whatever order it keeps names in.
  for (const ParsedField& field : theirs) {
    std::vector<std::string_view> mine;
    std::vector<std::string_view> its;
    for (const ParsedField& f : ours) {
      if (f.name == field.name) mine.push_back(f.value);
    }
    for (const ParsedField& f : theirs) {
      if (f.name == field.name) its.push_back(f.value);
    }
    if (mine != its) return Agreement::kDisagrees;
  }
  return Agreement::kAgrees;
}

}  // namespace jetfan
