#include "encoder.hpp"

#include <algorithm>
#include <charconv>
#include <iterator>

#include "protocol.hpp"

namespace jetfan::proto {
namespace {

void append_number(std::string& out, std::uint64_t value) {
  char digits[20];
  const auto [end, ec] = std::to_chars(digits, digits + sizeof digits, value);
  out.append(digits, end);
}

void append_verb_id(std::string& out, std::string_view verb, std::uint64_t id) {
  out.append(verb);
  out.push_back(' ');
  append_number(out, id);
}

// A line of free text must not end the control line early or smuggle in another frame.
void append_one_line(std::string& out, std::string_view text) {
  for (char c : text) out.push_back(c == '\r' || c == '\n' ? ' ' : c);
}

}  // namespace

void append_ready(std::string& out, std::uint32_t version, std::string_view handler, std::uint32_t max_unconfirmed,
                  const std::vector<std::string>& patterns) {
  out.append("READY ");
  append_number(out, version);
  out.push_back(' ');
  out.append(handler);
  out.push_back(' ');
  append_number(out, max_unconfirmed);
  for (const auto& pattern : patterns) {
    out.push_back(' ');
    out.append(pattern);
  }
  out.append("\r\n");
}

std::size_t ready_line_length(std::string_view handler, std::uint32_t max_unconfirmed,
                              const std::vector<std::string>& patterns) {
  std::size_t length = std::string_view("READY ").size() + std::to_string(kLatestVersion).size() + 1 + handler.size() +
                       1 + std::to_string(max_unconfirmed).size() + 2;
  for (const auto& pattern : patterns) length += 1 + pattern.size();
  return length;
}

namespace {

// Version 2's words after the ones of version 1, and version 3's after those.
struct Version2Words {
  std::uint64_t published_ns;
  std::string_view subject;
  std::uint64_t server_deliveries;
  bool version3;                 // then " <traceparent>" follows
  std::string_view traceparent;  // version 3: "-" when it is not one (empty included)
};

// "MSG <id> <key> <seq> <deliveries> <header-bytes> <total-bytes>", then in version 2 (`v2` given)
// " <published> <subject> <server-deliveries>", then in version 3 " <traceparent>", then "\r\n".
// One MSG line per recipient of every message: the numbers go into buffers on the stack and the line
// into `out` in a few appends, not a dozen.
void append_msg_words(std::string& out, std::uint64_t id, std::string_view key, std::uint64_t stream_seq,
                      std::uint64_t deliveries, std::size_t header_bytes, std::size_t total_bytes,
                      const Version2Words* v2) {
  char head[4 + 20 + 1] = {'M', 'S', 'G', ' '};
  char* at = std::to_chars(head + 4, std::end(head) - 1, id).ptr;
  *at++ = ' ';
  out.append(head, static_cast<std::size_t>(at - head));
  out.append(key);
  char tail[5 * 21 + 2];
  at = tail;
  for (const std::uint64_t number : {stream_seq, deliveries, std::uint64_t{header_bytes}, std::uint64_t{total_bytes}}) {
    *at++ = ' ';
    at = std::to_chars(at, std::end(tail), number).ptr;
  }
  if (v2 == nullptr) {
    *at++ = '\r';
    *at++ = '\n';
    out.append(tail, static_cast<std::size_t>(at - tail));
    return;
  }
  *at++ = ' ';
  at = std::to_chars(at, std::end(tail), v2->published_ns).ptr;
  *at++ = ' ';
  out.append(tail, static_cast<std::size_t>(at - tail));
  out.append(v2->subject);
  at = tail;
  *at++ = ' ';
  at = std::to_chars(at, std::end(tail), v2->server_deliveries).ptr;
  if (v2->version3) {
    *at++ = ' ';
    out.append(tail, static_cast<std::size_t>(at - tail));
    // Anything else would make every client drop the connection: it goes as "no trace context".
    out.append(is_traceparent(v2->traceparent) ? v2->traceparent : std::string_view("-"));
    out.append("\r\n");
    return;
  }
  *at++ = '\r';
  *at++ = '\n';
  out.append(tail, static_cast<std::size_t>(at - tail));
}

}  // namespace

void append_msg_line(std::string& out, std::uint64_t id, std::string_view key, std::uint64_t stream_seq,
                     std::uint64_t deliveries, std::size_t header_bytes, std::size_t total_bytes) {
  append_msg_words(out, id, key, stream_seq, deliveries, header_bytes, total_bytes, nullptr);
}

void append_msg2_line(std::string& out, std::uint64_t id, std::string_view key, std::uint64_t stream_seq,
                      std::uint64_t deliveries, std::size_t header_bytes, std::size_t total_bytes,
                      std::uint64_t published_ns, std::string_view subject, std::uint64_t server_deliveries) {
  const Version2Words v2{published_ns, subject, server_deliveries, false, {}};
  append_msg_words(out, id, key, stream_seq, deliveries, header_bytes, total_bytes, &v2);
}

void append_msg3_line(std::string& out, std::uint64_t id, std::string_view key, std::uint64_t stream_seq,
                      std::uint64_t deliveries, std::size_t header_bytes, std::size_t total_bytes,
                      std::uint64_t published_ns, std::string_view subject, std::uint64_t server_deliveries,
                      std::string_view traceparent) {
  const Version2Words v3{published_ns, subject, server_deliveries, true, traceparent};
  append_msg_words(out, id, key, stream_seq, deliveries, header_bytes, total_bytes, &v3);
}

void append_msg(std::string& out, std::uint64_t id, std::string_view key, std::uint64_t stream_seq,
                std::uint64_t deliveries, std::string_view headers, std::string_view payload) {
  append_msg_line(out, id, key, stream_seq, deliveries, headers.size(), headers.size() + payload.size());
  out.append(headers);
  out.append(payload);
  out.append("\r\n");
}

void append_msg(std::string& out, std::uint32_t version, const Delivery& d) {
  const std::size_t total = d.headers.size() + d.payload.size();
  if (version >= kVersion3) {
    append_msg3_line(out, d.id, d.key, d.stream_seq, d.deliveries, d.headers.size(), total, d.published_ns, d.subject,
                     d.server_deliveries, d.traceparent);
  } else if (version >= kVersion2) {
    append_msg2_line(out, d.id, d.key, d.stream_seq, d.deliveries, d.headers.size(), total, d.published_ns, d.subject,
                     d.server_deliveries);
  } else {
    append_msg_line(out, d.id, d.key, d.stream_seq, d.deliveries, d.headers.size(), total);
  }
  out.append(d.headers);
  out.append(d.payload);
  out.append("\r\n");
}

void append_err(std::string& out, std::string_view reason) {
  out.append("ERR ");
  append_one_line(out, reason);
  out.append("\r\n");
}

void append_ping(std::string& out) { out.append("PING\r\n"); }
void append_pong(std::string& out) { out.append("PONG\r\n"); }

void append_hello(std::string& out, std::string_view handler, std::uint32_t version) {
  out.append("HELLO ");
  out.append(handler);
  out.push_back(' ');
  append_number(out, version);
  out.append("\r\n");
}

void append_ack(std::string& out, std::uint64_t id) {
  append_verb_id(out, "ACK", id);
  out.append("\r\n");
}

namespace {

// Ends the line begun at `start` with " <reason>\r\n". The whole line must fit jetfan's limit, or
// jetfan would drop the connection instead of taking the confirmation: the reason is cut, never
// inside a UTF-8 character.
void append_reason_and_end(std::string& out, std::size_t start, std::string_view reason) {
  const std::size_t used = out.size() - start + 3;  // ' ' and "\r\n"
  std::size_t keep = used < kMaxCommandLine ? std::min(reason.size(), kMaxCommandLine - used) : 0;
  while (keep < reason.size() && keep > 0 && (static_cast<unsigned char>(reason[keep]) & 0xC0) == 0x80) --keep;
  if (keep > 0) {
    out.push_back(' ');
    append_one_line(out, reason.substr(0, keep));
  }
  out.append("\r\n");
}

}  // namespace

void append_nak(std::string& out, std::uint64_t id, std::optional<std::uint64_t> delay_ms, std::string_view reason,
                std::uint32_t version) {
  const std::size_t start = out.size();
  append_verb_id(out, "NAK", id);
  if (version < kVersion3) reason = {};
  if (delay_ms) {
    out.push_back(' ');
    append_number(out, *delay_ms);
  } else if (!reason.empty()) {
    out.append(" -");
  }
  append_reason_and_end(out, start, reason);
}

void append_term(std::string& out, std::uint64_t id, std::string_view reason) {
  const std::size_t start = out.size();
  append_verb_id(out, "TERM", id);
  append_reason_and_end(out, start, reason);
}

void append_wip(std::string& out, std::uint64_t id) {
  append_verb_id(out, "WIP", id);
  out.append("\r\n");
}

void append_pub(std::string& out, std::uint64_t id, std::string_view subject, std::string_view headers,
                std::string_view payload, std::optional<std::uint64_t> tied_to, std::uint64_t tie_index) {
  append_verb_id(out, "PUB", id);
  out.push_back(' ');
  out.append(subject);
  out.push_back(' ');
  append_number(out, headers.size());
  out.push_back(' ');
  append_number(out, headers.size() + payload.size());
  if (tied_to) {
    out.push_back(' ');
    append_number(out, *tied_to);
    out.push_back(' ');
    append_number(out, tie_index);
  }
  out.append("\r\n");
  out.append(headers);
  out.append(payload);
  out.append("\r\n");
}

void append_pubok(std::string& out, std::uint64_t id, std::string_view stream, std::uint64_t seq, bool duplicate) {
  append_verb_id(out, "PUBOK", id);
  out.push_back(' ');
  out.append(stream);
  out.push_back(' ');
  append_number(out, seq);
  out.append(duplicate ? " 1\r\n" : " 0\r\n");
}

void append_puberr(std::string& out, std::uint64_t id, std::string_view code, std::string_view reason) {
  const std::size_t start = out.size();
  append_verb_id(out, "PUBERR", id);
  out.push_back(' ');
  out.append(code);
  append_reason_and_end(out, start, reason);
}

}  // namespace jetfan::proto
