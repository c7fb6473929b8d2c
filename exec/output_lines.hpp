#pragma once
// Cuts a command's output into lines as it arrives, and hands each to a sink: how `jetfan exec`
// prefixes a command's stdout and stderr. Remembers the last non-blank line (the TERM reason).
// Not thread-safe; one per stream.

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace jetfan {

class OutputLines {
 public:
  using Sink = std::function<void(std::string_view line)>;
  // Lines longer than `max_line` are passed on in pieces of that size.
  explicit OutputLines(Sink sink, std::size_t max_line = 16 * 1024);

  void append(std::string_view bytes);
  // The stream ended: a last line without a line end is passed on.
  void finish();
  // The last line with something other than blanks in it, without its line end; may be cut.
  const std::string& last_line() const { return last_line_; }

 private:
  void emit(std::string_view line);

  Sink sink_;
  std::size_t max_line_;
  std::string partial_;
  std::string last_line_;
};

}  // namespace jetfan

namespace jetfan {

// Cuts a stream into whole lines, as `jetfan exec` reads what a command writes to its publish
// descriptor: each line's bytes exactly, without its "\n" (a "\r" before it is the line's). A line
// longer than `max_line` is never cut into pieces: its first `max_line` bytes go to the sink with
// `too_long` set, and the rest of it, to its "\n", is dropped. Not thread-safe.
class WholeLines {
 public:
  using Sink = std::function<void(std::string_view line, bool too_long)>;
  WholeLines(Sink sink, std::size_t max_line);

  void append(std::string_view bytes);
  // The stream ended: a last line without a line end is passed on.
  void finish();

 private:
  Sink sink_;
  std::size_t max_line_;
  std::string partial_;
  bool dropping_ = false;  // in the rest of a line too long
};

}  // namespace jetfan
