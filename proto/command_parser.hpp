#pragma once
// Parses what a handler sends to jetfan (PROTOCOL.md, "Handler -> jetfan"): incremental, I/O-free,
// in the style of Asio's request_parser. Feed it whatever bytes arrived; it hands out one command
// at a time. After kError the stream is unusable: the peer is to be told error() and dropped.
// Lines are read as the version set_version() names says (version 1 until then): from version 3 on,
// NAK may carry a reason, and PUB (a publish, with a body after its line) is a command. Not
// thread-safe; one parser per connection.

#include <string>
#include <string_view>

#include "body_reader.hpp"
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
  // A PUB body larger than this (headers and payload) is read and dropped, not kept: the command
  // comes out with `dropped` set. kMaxBody (the framing limit, past which the stream is broken) by
  // default; jetfan sets the server's max_payload, so that a handler cannot make it hold more.
  void set_max_publish_body(std::size_t bytes) { max_publish_body_ = bytes; }

 private:
  Result fail(ErrorCode code, std::string why);
  LineReader lines_{kMaxCommandLine};
  std::string error_;
  ErrorCode code_ = ErrorCode::kNone;
  std::vector<std::string_view> words_;
  std::uint32_t version_ = kVersion1;
  std::size_t max_publish_body_ = kMaxBody;
  // While a PUB body is being read: the command so far, its body going into it.
  Command pending_;
  BodyReader body_;
};

// Parses one complete, non-blank control line (without its line end) of protocol `version`;
// `words` is scratch space. On false, `code` and `error` say why. A PUB comes out with the line's
// words only: its body (header_bytes of header block, body_bytes in all) is still to be read.
bool parse_command_line(std::string_view line, std::uint32_t version, Command& out, ErrorCode& code, std::string& error,
                        std::vector<std::string_view>& words);

}  // namespace jetfan::proto
