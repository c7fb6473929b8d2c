#include "body_reader.hpp"

#include <algorithm>

namespace jetfan::proto {

void BodyReader::start(std::size_t header_bytes, std::size_t total_bytes, std::string& headers, std::string& payload,
                       bool keep) {
  headers_ = &headers;
  payload_ = &payload;
  keep_ = keep;
  headers.clear();
  payload.clear();
  if (keep) {  // what the line announced, up to kMaxReserve: the bytes themselves may never come
    headers.reserve(std::min(header_bytes, kMaxReserve));
    payload.reserve(std::min(total_bytes - header_bytes, kMaxReserve));
  }
  header_left_ = header_bytes;
  left_ = total_bytes + 2;
}

BodyReader::Result BodyReader::read(std::string_view& input) {
  while (left_ > 0 && !input.empty()) {
    std::size_t take = 0;
    if (left_ <= 2) {  // the "\r\n" after the body
      take = std::min(left_, input.size());
      for (std::size_t i = 0; i < take; ++i) trailer_[2 - left_ + i] = input[i];
    } else {
      const bool header = header_left_ > 0;
      take = std::min(header ? header_left_ : left_ - 2, input.size());
      if (keep_) (header ? headers_ : payload_)->append(input.substr(0, take));
      if (header) header_left_ -= take;
    }
    input.remove_prefix(take);
    left_ -= take;
  }
  if (left_ > 0) return Result::kNeedMore;
  return trailer_[0] == '\r' && trailer_[1] == '\n' ? Result::kDone : Result::kBadEnd;
}

}  // namespace jetfan::proto
