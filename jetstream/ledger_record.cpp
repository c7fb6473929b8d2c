#include "ledger_record.hpp"

#include <charconv>

#include "json_read.hpp"

namespace jetfan::jetstream {

namespace {

constexpr std::string_view kOperation = "KV-Operation:";

std::string prefix(std::string_view bucket, std::string_view durable) {
  std::string out = "$KV.";
  out.append(bucket).append(".").append(durable).append(".");
  return out;
}

}  // namespace

bool valid_bucket_name(std::string_view bucket) {
  if (bucket.empty()) return false;
  for (const char c : bucket) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
    if (!ok) return false;
  }
  return true;
}

std::string ledger_stream(std::string_view bucket) { return "KV_" + std::string(bucket); }

std::string ledger_subject(std::string_view bucket, std::string_view durable, std::uint64_t seq) {
  return prefix(bucket, durable) + std::to_string(seq);
}

std::string ledger_filter(std::string_view bucket, std::string_view durable) { return prefix(bucket, durable) + ">"; }

std::optional<std::uint64_t> ledger_seq_of(std::string_view subject, std::string_view bucket,
                                           std::string_view durable) {
  const std::string head = prefix(bucket, durable);
  if (!subject.starts_with(head)) return std::nullopt;
  const std::string_view digits = subject.substr(head.size());
  std::uint64_t seq = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), seq);
  if (error != std::errc() || end != digits.data() + digits.size() || digits.empty() || seq == 0) return std::nullopt;
  return seq;
}

std::string ledger_value(const std::vector<std::string>& handlers) {
  return detail::Json{{"confirmed", handlers}}.dump();
}

std::optional<std::vector<std::string>> parse_ledger_value(std::string_view value) {
  const detail::Json parsed = detail::parse(value);
  if (!parsed.is_object()) return std::nullopt;
  const auto confirmed = parsed.find("confirmed");
  if (confirmed == parsed.end() || !confirmed->is_array()) return std::nullopt;
  std::vector<std::string> handlers;
  for (const auto& name : *confirmed) {
    if (!name.is_string()) return std::nullopt;
    handlers.push_back(name.get<std::string>());
  }
  return handlers;
}

bool is_ledger_delete(std::string_view header_block) {
  std::size_t at = header_block.find(kOperation);
  if (at == std::string_view::npos) return false;
  std::string_view rest = header_block.substr(at + kOperation.size());
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  return rest.starts_with("DEL") || rest.starts_with("PURGE");
}

}  // namespace jetfan::jetstream
