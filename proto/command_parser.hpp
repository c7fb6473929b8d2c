#pragma once
// Parses what a handler sends to jetfan (PROTOCOL.md, "Handler -> jetfan"): incremental, I/O-free,
// in the style of Asio's request_parser. Feed it whatever bytes arrived; it hands out one command
// at a time. After kError the stream is unusable: the peer is to be told error() and dropped.
// Not thread-safe; one parser per connection.

#include <string>
#include <string_view>

#include "line_reader.hpp"
#include "protocol.hpp"

namespace jetfan::proto {

class CommandParser {
 public:
  enum class Result { kCommand, kNeedMore, kError };

  // Consumes from the front of `input` up to and including one command.
  Result parse(std::string_view& input, Command& out);
  // After kError: what was wrong, for people (error()) and as a stable code (code()).
  const std::string& error() const { return error_; }
  ErrorCode code() const { return code_; }

 private:
  Result fail(ErrorCode code, std::string why);
  LineReader lines_{kMaxCommandLine};
  std::string error_;
  ErrorCode code_ = ErrorCode::kNone;
  std::vector<std::string_view> words_;
};

// Parses one complete, non-blank control line (without its line end); `words` is scratch space.
// On false, `code` and `error` say why.
bool parse_command_line(std::string_view line, Command& out, ErrorCode& code, std::string& error,
                        std::vector<std::string_view>& words);

}  // namespace jetfan::proto
