#include "tail_record.hpp"

#include "format.hpp"

namespace jetfan {
namespace {

void append_printable(std::string& out, std::string_view bytes, std::size_t limit) {
  const std::size_t shown = std::min(bytes.size(), limit);
  for (std::size_t i = 0; i < shown; ++i) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    out.push_back(c >= 0x20 && c < 0x7f ? static_cast<char>(c) : '.');
  }
  if (bytes.size() > limit) out.append("...");
}

// "Name: value; Name: value" from "NATS/1.0\r\nName: value\r\n...\r\n".
void append_headers(std::string& out, std::string_view block) {
  const auto first = block.find("\r\n");
  if (first == std::string_view::npos) return;
  block.remove_prefix(first + 2);
  bool any = false;
  while (!block.empty()) {
    const auto end = block.find("\r\n");
    const auto line = block.substr(0, end);
    if (line.empty()) break;
    out.append(any ? "; " : " | headers: ");
    append_printable(out, line, 120);
    any = true;
    if (end == std::string_view::npos) break;
    block.remove_prefix(end + 2);
  }
}

}  // namespace

void append_tail_record(std::string& out, const TailItem& item, const std::vector<std::string>& handler_names) {
  out.append(format::utc(item.unix_ms)).push_back(' ');
  append_printable(out, item.key, 256);
  out.append(" seq ").append(std::to_string(item.stream_seq));
  out.append(" delivery ").append(std::to_string(item.deliveries));
  if (item.unroutable) {
    out.append(" -> unroutable (no key prefix): terminated");
  } else if (item.recipients == 0) {
    out.append(" -> no handler: acked");
  } else {
    out.append(" ->");
    bool first = true;
    for (std::size_t h = 0; h < handler_names.size(); ++h) {
      if (!(item.recipients & (HandlerMask{1} << h))) continue;
      out.append(first ? " " : ", ").append(handler_names[h]);
      first = false;
    }
  }
  append_headers(out, item.headers);
  out.append(" | ").append(std::to_string(item.payload.size())).append(" bytes: ");
  append_printable(out, item.payload, kTailPayloadBytes);
  out.push_back('\n');
}

void append_tail_dropped(std::string& out, std::uint64_t dropped) {
  out.append("-- dropped ").append(std::to_string(dropped)).append(" message(s): this tail read too slowly\n");
}

}  // namespace jetfan
