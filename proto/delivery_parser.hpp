#pragma once
// Parses what jetfan sends to a handler (PROTOCOL.md, "jetfan -> handler"): incremental, I/O-free.
// Used by client libraries. After kError the stream is unusable. Not thread-safe.
// The MSG layout is that of the version the stream's READY announced (version 1 before a READY):
// version 2's MSG has three more arguments (the publish time, the subject, the server's count), and
// version 3's one more after those (the delivery's traceparent, or "-").

#include <string>
#include <string_view>

#include "line_reader.hpp"
#include "protocol.hpp"

namespace jetfan::proto {

class DeliveryParser {
 public:
  enum class Result { kFrame, kNeedMore, kError };

  // Consumes from the front of `input` up to and including one frame.
  Result parse(std::string_view& input, Frame& out);
  // After kError: what was wrong, for people (error()) and as a stable code (code()).
  const std::string& error() const { return error_; }
  ErrorCode code() const { return code_; }
  // The version whose MSG layout is expected: the last READY's, 1 before any.
  std::uint32_t version() const { return version_; }

 private:
  Result fail(ErrorCode code, std::string why);
  Result parse_line(std::string_view line, Frame& out);

  LineReader lines_{kMaxDeliveryLine};
  std::string error_;
  ErrorCode code_ = ErrorCode::kNone;
  std::vector<std::string_view> words_;
  std::uint32_t version_ = kVersion1;
  // While a MSG body is being read: the frame so far and how many body bytes (with the final
  // "\r\n") are still to come.
  bool in_body_ = false;
  Frame body_frame_;
  std::size_t header_bytes_ = 0;
  std::size_t body_left_ = 0;  // payload bytes and the final "\r\n" still to come
  std::string trailer_;        // the "\r\n" after the body, as it arrives
};

}  // namespace jetfan::proto
