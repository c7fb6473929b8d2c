#pragma once
// Cuts a byte stream into control lines, incrementally and without I/O. Used by both parsers.
// A line is returned without its "\n" or "\r\n". When the whole line is already in the input it is
// returned as a view into the input, without a copy; otherwise its start is kept until the rest
// arrives. The view returned stays valid until the next call.

#include <string>
#include <string_view>

namespace jetfan::proto {

class LineReader {
 public:
  explicit LineReader(std::size_t max_line) : max_line_(max_line) {}

  enum class Result { kLine, kNeedMore, kTooLong };
  // Consumes from the front of `input`. On kLine, `line` is set.
  Result next(std::string_view& input, std::string_view& line);

 private:
  std::size_t max_line_;
  std::string partial_;
  bool partial_returned_ = false;  // partial_ was handed out as the last line; clear it next call
};

}  // namespace jetfan::proto
