#include "unreadable_subject.hpp"

#include <algorithm>

namespace jetfan {

bool readable_subject(std::string_view subject) {
  if (subject.empty()) return false;
  return std::none_of(subject.begin(), subject.end(),
                      [](char c) { return c == '\r' || c == '\n' || c == ' ' || c == '\t' || c == '\0'; });
}

std::string escape_subject(std::string_view subject) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(subject.size());
  for (const char c : subject) {
    const auto byte = static_cast<unsigned char>(c);
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (byte < 0x20 || byte > 0x7e) {
          out += "\\x";
          out += kHex[byte >> 4];
          out += kHex[byte & 0xf];
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string ack_subject(std::string_view stream, std::string_view consumer, std::uint64_t deliveries,
                        std::uint64_t stream_seq, std::uint64_t consumer_seq) {
  std::string subject = "$JS.ACK.";
  subject.append(stream).append(".").append(consumer);
  subject.append(".").append(std::to_string(deliveries));
  subject.append(".").append(std::to_string(stream_seq));
  subject.append(".").append(std::to_string(consumer_seq));
  subject.append(".0.0");
  return subject;
}

void UnreadableSearch::bound(std::uint64_t delivered_consumer_seq, std::uint64_t delivered_stream_seq) {
  last_consumer_seq_ = delivered_consumer_seq;
  last_stream_seq_ = delivered_stream_seq;
}

void UnreadableSearch::arrived(std::uint64_t stream_seq, std::uint64_t consumer_seq) {
  if (consumer_seq == 0) return;
  if (broken_ && !broken_->first_after) broken_->first_after = consumer_seq;
  if (consumer_seq > last_consumer_seq_) {
    last_consumer_seq_ = consumer_seq;
    last_stream_seq_ = stream_seq;
  }
}

void UnreadableSearch::disconnected() {
  ++breaks_;
  connected_ = false;
  if (search_) return;
  broken_ = Break{last_consumer_seq_, last_stream_seq_, std::nullopt, 0};
}

void UnreadableSearch::heard(const Server& server) {
  if (search_ || !broken_ || !connected_) return;
  // The first delivery jetfan read after the break, else the next the server will make: a number
  // between it and the last read before the break never reached jetfan.
  const std::uint64_t next_read = broken_->first_after.value_or(server.delivered_consumer_seq + 1);
  if (next_read <= broken_->last_consumer_seq + 1) {
    if (++broken_->quiet >= kQuietAnswers) broken_.reset();
    return;
  }
  Search search;
  search.at = *broken_;
  search.server = server;
  search.next = std::max(search.at.last_stream_seq, server.ack_floor_stream_seq) + 1;
  search.range_end = server.delivered_stream_seq;
  broken_.reset();
  search_ = search;
  if (search_->next > search_->range_end && !advance()) end_search(false);
}

bool UnreadableSearch::advance() {
  Search& search = *search_;
  if (search.second_range) return false;
  search.second_range = true;
  search.next = search.server.ack_floor_stream_seq + 1;
  search.range_end = std::min(search.at.last_stream_seq, search.server.delivered_stream_seq);
  return search.next <= search.range_end;
}

std::optional<std::uint64_t> UnreadableSearch::next_read() {
  if (!search_ || search_->asked) return std::nullopt;
  if (search_->reads >= kMaxReads) {
    end_search(false);
    return std::nullopt;
  }
  search_->asked = true;
  return search_->next;
}

std::optional<UnreadableFound> UnreadableSearch::read(std::uint64_t seq, std::optional<std::string_view> subject) {
  if (!search_ || !search_->asked) return std::nullopt;
  Search& search = *search_;
  search.asked = false;
  ++search.reads;
  if (subject && seq >= search.next && seq <= search.range_end) {
    if (!readable_subject(*subject)) {
      UnreadableFound found;
      found.stream_seq = seq;
      found.subject = std::string(*subject);
      found.consumer_seq = search.at.last_consumer_seq + 1;
      found.lost_after = search.server.ack_floor_stream_seq;
      found.lost_to = search.server.delivered_stream_seq;
      found.nak_consumer_seq = search.server.delivered_consumer_seq;
      found.again = found_seq_ == seq;
      found_seq_ = seq;
      end_search(true);
      return found;
    }
    search.next = seq + 1;
    if (search.next <= search.range_end) return std::nullopt;
  }
  // Nothing (more) in this range.
  if (!advance()) end_search(false);
  return std::nullopt;
}

void UnreadableSearch::read_failed() {
  if (search_) end_search(false);
}

void UnreadableSearch::end_search(bool found) {
  if (!found) ++not_found_;
  search_.reset();
}

}  // namespace jetfan
