#include "dead_letter_command.hpp"

#include <algorithm>
#include <charconv>
#include <vector>

namespace jetfan {
namespace {

std::vector<std::string> words_of(std::string_view text) {
  std::vector<std::string> words;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t start = text.find_first_not_of(" \t", at);
    if (start == std::string_view::npos) break;
    const std::size_t end = std::min(text.find_first_of(" \t", start), text.size());
    words.emplace_back(text.substr(start, end - start));
    at = end;
  }
  return words;
}

bool parse_number(std::string_view text, std::uint64_t& out) {
  if (text.empty()) return false;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  return error == std::errc() && end == text.data() + text.size() && out > 0;
}

// "A" or "A-B".
bool parse_range(std::string_view text, DeadLetterJob& job) {
  const std::size_t dash = text.find('-');
  if (dash == std::string_view::npos) {
    if (!parse_number(text, job.from)) return false;
    job.to = job.from;
    return true;
  }
  return parse_number(text.substr(0, dash), job.from) && parse_number(text.substr(dash + 1), job.to) &&
         job.from <= job.to;
}

std::string upper_word(std::string word) {
  for (auto& c : word) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  return word;
}

}  // namespace

std::optional<std::string> parse_dead_letter_command(std::string_view rest, bool redrive, DeadLetterJob& job) {
  const auto words = words_of(rest);
  if (words.empty()) return std::string("needs a handler name");
  job.kind = redrive ? DeadLetterJob::Kind::kRedrive : DeadLetterJob::Kind::kList;
  job.handler = words[0];
  bool chosen = false;
  for (std::size_t i = 1; i < words.size(); ++i) {
    const std::string word = upper_word(words[i]);
    if (!redrive && word == "JSON") {
      job.json = true;
    } else if (redrive && word == "DRY-RUN") {
      job.dry_run = true;
    } else if (redrive && word == "ALL" && !chosen) {
      job.all = true;
      chosen = true;
    } else if (!chosen && parse_range(words[i], job)) {
      chosen = true;
    } else {
      return "unexpected \"" + words[i].substr(0, 64) + "\"";
    }
  }
  if (redrive && !chosen) return std::string("needs ALL or a sequence range A[-B]");
  return std::nullopt;
}

}  // namespace jetfan
