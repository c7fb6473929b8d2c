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

void OutputQueue::done_writing() {
  writing_.clear();
  buffers_.clear();
}

}  // namespace jetfan
