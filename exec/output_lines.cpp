#include "output_lines.hpp"

namespace jetfan {

OutputLines::OutputLines(Sink sink, std::size_t max_line) : sink_(std::move(sink)), max_line_(max_line) {}

void OutputLines::emit(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.find_first_not_of(" \t") != std::string_view::npos) last_line_.assign(line);
  sink_(line);
}

void OutputLines::append(std::string_view bytes) {
  while (!bytes.empty()) {
    const auto end = bytes.find('\n');
    if (end == std::string_view::npos) {
      partial_.append(bytes);
      while (partial_.size() >= max_line_) {
        emit(std::string_view(partial_).substr(0, max_line_));
        partial_.erase(0, max_line_);
      }
      return;
    }
    if (partial_.empty()) {
      emit(bytes.substr(0, end));  // the whole line is here: no copy
    } else {
      partial_.append(bytes.substr(0, end));
      emit(partial_);
      partial_.clear();
    }
    bytes.remove_prefix(end + 1);
  }
}

void OutputLines::finish() {
  if (!partial_.empty()) emit(partial_);
  partial_.clear();
}

}  // namespace jetfan

namespace jetfan {

WholeLines::WholeLines(Sink sink, std::size_t max_line) : sink_(std::move(sink)), max_line_(max_line) {}

void WholeLines::append(std::string_view bytes) {
  while (!bytes.empty()) {
    const auto end = bytes.find('\n');
    const std::string_view piece = bytes.substr(0, end);
    if (!dropping_) {
      if (partial_.size() + piece.size() > max_line_) {
        partial_.append(piece.substr(0, max_line_ - partial_.size()));
        sink_(partial_, true);
        partial_.clear();
        dropping_ = true;
      } else if (end != std::string_view::npos && partial_.empty()) {
        sink_(piece, false);  // the whole line is here: no copy
      } else {
        partial_.append(piece);
        if (end != std::string_view::npos) {
          sink_(partial_, false);
          partial_.clear();
        }
      }
    }
    if (end == std::string_view::npos) return;
    dropping_ = false;
    bytes.remove_prefix(end + 1);
  }
}

void WholeLines::finish() {
  if (!partial_.empty()) sink_(partial_, false);
  partial_.clear();
  dropping_ = false;
}

}  // namespace jetfan
