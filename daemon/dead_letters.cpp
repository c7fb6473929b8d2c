#include "dead_letters.hpp"

#include <ctime>

namespace jetfan {
namespace {

bool is_ours(std::string_view line) {
  constexpr std::string_view kPrefix = "jetfan-";
  if (line.size() < kPrefix.size()) return false;
  for (std::size_t i = 0; i < kPrefix.size(); ++i) {
    const char c = line[i] >= 'A' && line[i] <= 'Z' ? static_cast<char>(line[i] - 'A' + 'a') : line[i];
    if (c != kPrefix[i]) return false;
  }
  return true;
}

std::string rfc3339(std::uint64_t ns) {
  const auto seconds = static_cast<std::time_t>(ns / 1'000'000'000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[40];
  const std::size_t n = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &utc);
  char fraction[16];
  std::snprintf(fraction, sizeof fraction, ".%09lluZ", static_cast<unsigned long long>(ns % 1'000'000'000));
  return std::string(text, n) + fraction;
}

// Header values are one line: a CR or LF would end the header early.
std::string one_line(std::string_view value) {
  std::string out(value);
  for (char& c : out) {
    if (c == '\r' || c == '\n') c = ' ';
  }
  return out;
}

}  // namespace

std::string dead_letter_headers(std::string_view original, const DeadLetterFacts& facts) {
  std::string block = "NATS/1.0\r\n";
  // The original's own headers, in order; its first line (the version, perhaps a status) is ours.
  std::size_t at = original.find("\r\n");
  while (at != std::string_view::npos && at + 2 < original.size()) {
    const std::size_t start = at + 2;
    const std::size_t end = original.find("\r\n", start);
    if (end == std::string_view::npos || end == start) break;
    const std::string_view line = original.substr(start, end - start);
    if (!is_ours(line)) block.append(line).append("\r\n");
    at = end;
  }
  auto add = [&block](std::string_view name, const std::string& value) {
    block.append(name).append(": ").append(one_line(value)).append("\r\n");
  };
  add("Jetfan-Handler", std::string(facts.handler));
  add("Jetfan-Reason", facts.reason);
  add("Jetfan-Attempts", std::to_string(facts.attempts));
  add("Jetfan-Subject", std::string(facts.subject));
  add("Jetfan-Stream", std::string(facts.stream));
  add("Jetfan-Sequence", std::to_string(facts.stream_seq));
  add("Jetfan-Consumer", std::string(facts.consumer));
  add("Jetfan-Deliveries", std::to_string(facts.deliveries));
  if (facts.published_ns != 0) add("Jetfan-Time", rfc3339(facts.published_ns));
  block.append("\r\n");
  return block;
}

std::vector<std::uint64_t> PendingPublishes::overdue(TimePoint now, Duration timeout) {
  std::vector<std::uint64_t> out;
  for (auto it = sent_.begin(); it != sent_.end();) {
    if (it->second + timeout <= now) {
      out.push_back(it->first);
      it = sent_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

std::vector<std::uint64_t> PendingPublishes::take_all() {
  std::vector<std::uint64_t> out;
  out.reserve(sent_.size());
  for (const auto& [id, when] : sent_) out.push_back(id);
  sent_.clear();
  return out;
}

}  // namespace jetfan
