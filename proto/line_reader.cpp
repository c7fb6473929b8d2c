#include "line_reader.hpp"

namespace jetfan::proto {

LineReader::Result LineReader::next(std::string_view& input, std::string_view& line) {
  if (partial_returned_) {
    partial_.clear();
    partial_returned_ = false;
  }
  const std::size_t newline = input.find('\n');
  if (newline == std::string_view::npos) {
    if (partial_.size() + input.size() >= max_line_) return Result::kTooLong;
    partial_.append(input);
    input.remove_prefix(input.size());
    return Result::kNeedMore;
  }
  if (partial_.size() + newline + 1 > max_line_) return Result::kTooLong;
  if (partial_.empty()) {
    line = input.substr(0, newline);
  } else {
    // The line began in an earlier read; it is handed out from partial_, which the next call clears.
    partial_.append(input.substr(0, newline));
    line = partial_;
    partial_returned_ = true;
  }
  input.remove_prefix(newline + 1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return Result::kLine;
}

}  // namespace jetfan::proto
