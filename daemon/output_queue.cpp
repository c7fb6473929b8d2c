#include "output_queue.hpp"

namespace jetfan {

void OutputQueue::Batch::seal() {
  if (owned.size() == mark) return;
  // Consecutive owned bytes make one piece: a burst of confirmations' answers is one buffer.
  if (!pieces.empty() && !pieces.back().body && pieces.back().offset + pieces.back().length == mark) {
    pieces.back().length += owned.size() - mark;
  } else {
    pieces.push_back(Piece{mark, owned.size() - mark, nullptr});
  }
  mark = owned.size();
}

void OutputQueue::Batch::clear() {
  owned.clear();  // keeps its capacity for the next batch
  mark = 0;
  pieces.clear();
}

void OutputQueue::append(std::string_view bytes) {
  queued_.owned.append(bytes);
  queued_.seal();
}

void OutputQueue::appended() { queued_.seal(); }

void OutputQueue::append_body(const MessageBytesPtr& message) {
  queued_.seal();
  queued_.pieces.push_back(Piece{0, message->headers().size() + message->payload().size(), message});
}

const std::vector<boost::asio::const_buffer>& OutputQueue::take_batch() {
  queued_.seal();
  std::swap(queued_, writing_);
  queued_.clear();
  buffers_.clear();
  next_buffer_ = next_offset_ = 0;
  for (const auto& piece : writing_.pieces) {
    if (!piece.body) {
      buffers_.emplace_back(writing_.owned.data() + piece.offset, piece.length);
      continue;
    }
    const auto headers = piece.body->headers();
    const auto payload = piece.body->payload();
    if (!headers.empty()) buffers_.emplace_back(headers.data(), headers.size());
    if (!payload.empty()) buffers_.emplace_back(payload.data(), payload.size());
  }
  return buffers_;
}

std::span<const iovec> OutputQueue::unwritten(std::size_t max) {
  iovecs_.clear();
  for (std::size_t i = next_buffer_; i < buffers_.size() && iovecs_.size() < max; ++i) {
    const std::size_t skip = i == next_buffer_ ? next_offset_ : 0;
    // iovec's base is not const; sendmsg only reads through it.
    iovecs_.push_back(
        iovec{const_cast<char*>(static_cast<const char*>(buffers_[i].data())) + skip, buffers_[i].size() - skip});
  }
  return iovecs_;
}

bool OutputQueue::written(std::size_t bytes) {
  while (next_buffer_ < buffers_.size()) {
    const std::size_t left = buffers_[next_buffer_].size() - next_offset_;
    if (bytes < left) {
      next_offset_ += bytes;
      return false;
    }
    bytes -= left;
    ++next_buffer_;
    next_offset_ = 0;
  }
  return true;
}

void OutputQueue::done_writing() {
  writing_.clear();
  buffers_.clear();
  next_buffer_ = next_offset_ = 0;
}

}  // namespace jetfan
