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
