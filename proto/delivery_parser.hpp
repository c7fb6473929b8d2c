#pragma once
// Parses what jetfan sends to a handler (PROTOCOL.md, "jetfan -> handler"): incremental, I/O-free.
// Used by client libraries. After kError the stream is unusable. Not thread-safe.
// The MSG layout is that of the version the stream's READY announced (version 1 before a READY):
// version 2's MSG has three more arguments (the publish time, the subject, the server's count), and
// version 3's one more after those (the delivery's traceparent, or "-"). PUBOK and PUBERR, the
// answers to a handler's PUB, are frames from version 3 on (unknown verbs before).

#include <string>
#include <string_view>

#include "body_reader.hpp"
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
  Result parse_msg_line();
  Result parse_publish_answer(std::string_view line, bool stored, Frame& out);

  LineReader lines_{kMaxDeliveryLine};
  std::string error_;
  ErrorCode code_ = ErrorCode::kNone;
  std::vector<std::string_view> words_;
  std::uint32_t version_ = kVersion1;
  // While a MSG body is being read: the frame so far, its body going into it.
  Frame body_frame_;
  BodyReader body_;
};

}  // namespace jetfan::proto
