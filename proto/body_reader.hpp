#pragma once
// Reads the body that follows a MSG line (jetfan -> handler) or a PUB line (handler -> jetfan):
// <header-bytes> of NATS header block, then the payload, <total-bytes> in all, then "\r\n".
// Incremental and I/O-free: each byte is copied once, straight into the string it belongs to, or,
// for a body the reader was told to drop, nowhere. Used by both parsers. Not thread-safe.

#include <cstddef>
#include <string>
#include <string_view>

namespace jetfan::proto {

class BodyReader {
 public:
  // Room made at start() for what a body announces, at most: more grows as the bytes arrive.
  static constexpr std::size_t kMaxReserve = 1024 * 1024;

  enum class Result { kDone, kNeedMore, kBadEnd };

  // Starts a body of `total_bytes`, the first `header_bytes` of them the header block
  // (precondition: header_bytes <= total_bytes). The header block goes to `headers`, the rest to
  // `payload`, both cleared first; they must stay alive until kDone or kBadEnd. With `keep` false
  // the body is read and dropped: both are left empty.
  void start(std::size_t header_bytes, std::size_t total_bytes, std::string& headers, std::string& payload,
             bool keep = true);
  // Consumes from the front of `input` what belongs to the body. kDone once it and its "\r\n" are
  // in; kBadEnd when the two bytes after it are not "\r\n"; the reader is idle after either.
  Result read(std::string_view& input);
  bool active() const { return left_ > 0; }

 private:
  std::string* headers_ = nullptr;
  std::string* payload_ = nullptr;
  bool keep_ = true;
  std::size_t header_left_ = 0;  // header block bytes still to come
  std::size_t left_ = 0;         // body bytes and the final "\r\n" still to come
  char trailer_[2] = {};
};

}  // namespace jetfan::proto
