#include "dead_letters.hpp"

#include <ctime>

#include "base64.hpp"

namespace jetfan {
namespace {

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

bool starts_with_folded(std::string_view text, std::string_view lower_prefix) {
  if (text.size() < lower_prefix.size()) return false;
  for (std::size_t i = 0; i < lower_prefix.size(); ++i) {
    const char c = text[i] >= 'A' && text[i] <= 'Z' ? static_cast<char>(text[i] - 'A' + 'a') : text[i];
    if (c != lower_prefix[i]) return false;
  }
  return true;
}

// An earlier jetfan's dedup id, on a dead letter that is redriven and given up again.
bool is_our_msg_id(std::string_view line) {
  constexpr std::string_view kName = "nats-msg-id:";
  if (!starts_with_folded(line, kName)) return false;
  std::string_view value = line.substr(kName.size());
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  return value.rfind("jetfan:", 0) == 0;
}

constexpr std::string_view kHeadersField = "jetfan-headers:";

// The field lines of a block, after its first line and up to its blank line, without their CRLF.
template <typename Each>
void each_line(std::string_view block, Each&& each) {
  std::size_t at = block.find("\r\n");
  while (at != std::string_view::npos && at + 2 < block.size()) {
    const std::size_t start = at + 2;
    const std::size_t end = block.find("\r\n", start);
    if (end == std::string_view::npos || end == start) break;
    each(block.substr(start, end - start));
    at = end;
  }
}

// The value of the last Jetfan-Headers field of `block`, without blanks around it; empty if none.
std::string_view last_original_block(std::string_view block) {
  std::string_view found;
  each_line(block, [&](std::string_view line) {
    if (!starts_with_folded(line, kHeadersField)) return;
    std::string_view value = line.substr(kHeadersField.size());
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    found = value;
  });
  return found;
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

std::string dedup_id(const DeadLetterFacts& facts) {
  std::string id = "jetfan:" + std::string(facts.stream) + ":" + std::string(facts.consumer) + ":" +
                   std::to_string(facts.stream_seq) + ":" + std::string(facts.handler);
  if (facts.redriven_from != 0) id += ":redrive:" + std::to_string(facts.redriven_from);
  return id;
}

std::string dead_letter_headers(std::string_view original, const DeadLetterFacts& facts) {
  std::string block = "NATS/1.0\r\n";
  block.append("Nats-Msg-Id: ").append(one_line(dedup_id(facts))).append("\r\n");
  // The original's own headers, in order; its first line (the version, perhaps a status) is ours.
  each_line(original, [&block](std::string_view line) {
    if (!starts_with_folded(line, "jetfan-") && !is_our_msg_id(line)) block.append(line).append("\r\n");
  });
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
  // The original block itself: a redrive's is the one its dead letter carried.
  if (facts.redriven_from != 0) {
    if (const std::string_view carried = last_original_block(original); !carried.empty()) {
      add("Jetfan-Headers", std::string(carried));
    }
  } else if (!original.empty()) {
    add("Jetfan-Headers", jetstream::base64_encode(original));
  }
  block.append("\r\n");
  return block;
}

std::string redriven_headers(std::string_view letter) {
  const auto original = jetstream::base64_decode(last_original_block(letter));
  constexpr std::string_view kEnd = "\r\n\r\n";
  if (!original || original->size() < kEnd.size() ||
      original->compare(original->size() - kEnd.size(), kEnd.size(), kEnd) != 0) {
    return std::string(letter);
  }
  std::string block(*original, 0, original->size() - 2);
  each_line(letter, [&block](std::string_view line) {
    if (starts_with_folded(line, "jetfan-")) block.append(line).append("\r\n");
  });
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
