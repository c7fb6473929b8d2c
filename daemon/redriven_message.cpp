#include "redriven_message.hpp"

#include <charconv>
#include <cstdio>
#include <memory>
#include <string>

#include "dead_letters.hpp"
#include "jetstream_subject.hpp"
#include "nats_header.hpp"
#include "topic_pattern.hpp"

namespace jetfan {

namespace {

// Why `subject` is not one a NATS server takes for a publish, or nullopt.
std::optional<std::string> bad_subject(std::string_view subject) {
  if (subject.empty()) return "its subject is empty";
  if (subject.size() > kMaxRedriveSubject) {
    return "its subject is " + std::to_string(subject.size()) + " bytes, more than " +
           std::to_string(kMaxRedriveSubject);
  }
  std::size_t token_start = 0;
  for (std::size_t i = 0; i <= subject.size(); ++i) {
    if (i == subject.size() || subject[i] == '.') {
      const std::string_view token = subject.substr(token_start, i - token_start);
      if (token.empty()) return "its subject has an empty token";
      if (token == "*" || token == ">") return "its subject has a wildcard token";
      token_start = i + 1;
      continue;
    }
    const auto byte = static_cast<unsigned char>(subject[i]);
    if (byte <= ' ' || byte == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", byte);
      return "its subject has the byte " + std::string(hex) + " at " + std::to_string(i);
    }
  }
  return std::nullopt;
}

}  // namespace

std::string_view redriven_subject(const jetstream::StoredMessage& letter) {
  return proto::find_header(letter.headers, "Jetfan-Subject").value_or(letter.subject);
}

std::optional<std::string> why_not_redrivable(const jetstream::StoredMessage& letter,
                                              const std::vector<std::string>& patterns, std::string_view strip_prefix) {
  const std::string_view subject = redriven_subject(letter);
  if (auto bad = bad_subject(subject)) return bad;
  const auto key = jetstream::key_of(subject, strip_prefix);
  if (!key) return "its subject does not start with key.strip_prefix \"" + std::string(strip_prefix) + "\"";
  for (const std::string& pattern : patterns) {
    if (topic_matches(pattern, *key)) return std::nullopt;
  }
  return "its key \"" + std::string(*key) + "\" matches none of the handler's patterns";
}

RedrivenMessage redriven_message(const jetstream::StoredMessage& letter, MessageBytesArena& arena) {
  // One allocation for the three strings the views point into, freed with the MessageBytes.
  struct LetterBytes {
    std::string subject, headers, payload;
  };
  auto bytes = std::make_unique<LetterBytes>();
  bytes->subject = std::string(redriven_subject(letter));
  bytes->headers = redriven_headers(letter.headers);
  bytes->payload = letter.payload;
  MessageParts parts{BytesOwner(nullptr, [](void* owned) { delete static_cast<LetterBytes*>(owned); }),
                     bytes->subject,
                     {},
                     bytes->headers,
                     bytes->payload};
  parts.owner.reset(bytes.release());
  RedrivenMessage made{make_message_bytes(std::move(parts), arena), 0};
  if (const auto seq = proto::find_header(letter.headers, "Jetfan-Sequence")) {
    std::from_chars(seq->data(), seq->data() + seq->size(), made.original_seq);
  }
  return made;
}

}  // namespace jetfan
