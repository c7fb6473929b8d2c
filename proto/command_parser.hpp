#pragma once
// Parses what a handler sends to jetfan (PROTOCOL.md, "Handler -> jetfan"): incremental, I/O-free,
// in the style of Asio's request_parser. Feed it whatever bytes arrived; it hands out one command
// at a time. After kError the stream is unusable: the peer is to be told error() and dropped.
// Lines are read as the version set_version() names says (version 1 until then): from version 3 on,
// NAK may carry a reason. Not thread-safe; one parser per connection.

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
  // The version the connection speaks from here on: the one READY named.
  void set_version(std::uint32_t version) { version_ = version; }
  std::uint32_t version() const { return version_; }

 private:
  Result fail(ErrorCode code, std::string why);
  LineReader lines_{kMaxCommandLine};
  std::string error_;
  ErrorCode code_ = ErrorCode::kNone;
  std::vector<std::string_view> words_;
  std::uint32_t version_ = kVersion1;
};

// Parses one complete, non-blank control line (without its line end) of protocol `version`;
// `words` is scratch space. On false, `code` and `error` say why.
bool parse_command_line(std::string_view line, std::uint32_t version, Command& out, ErrorCode& code, std::string& error,
                        std::vector<std::string_view>& words);

}  // namespace jetfan::proto
