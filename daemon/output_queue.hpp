#pragma once
// OutputQueue: the frames waiting to be written to one handler connection, as a gather list. Bytes
// made for this connection (control lines, PONG, ERR) are copied into an owned buffer; a message's
// body is referenced where it already is (MessageBytes), shared with its other recipients.
//
// Double-buffered: take_batch() hands what was queued to a write and starts a new queue, so frames
// appended during a write go in the next one. The batch's bytes stay valid until the next
// take_batch() or done_writing(). unwritten() and written() walk it for a gather write that may
// take several system calls.
//
// Thread: the io_context thread (its owner's).

#include <sys/uio.h>

#include <boost/asio/buffer.hpp>

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "message_bytes.hpp"

namespace jetfan {

class OutputQueue {
 public:
  // Appends bytes made for this connection.
  void append(std::string_view bytes);
  // For encoders that append in place; call after writing to owned().
  std::string& owned() { return queued_.owned; }
  void appended();
  // Appends a message's header block and payload, shared.
  void append_body(const MessageBytesPtr& message);

  bool empty() const { return queued_.pieces.empty() && queued_.owned.size() == queued_.mark; }
  // Bytes owned by this queue, queued and being written: what a peer that stops reading costs.
  std::size_t owned_bytes() const { return queued_.owned.size() + writing_.owned.size(); }

  // The queued frames as buffers for one gather write; the queue starts afresh.
  const std::vector<boost::asio::const_buffer>& take_batch();
  // What of the batch is not written yet, as at most `max` (> 0) iovecs for one sendmsg; empty once
  // all of it is. Valid until the next call of any member.
  std::span<const iovec> unwritten(std::size_t max);
  // `bytes` more of the batch were written (no more than unwritten() offered). True when all was.
  bool written(std::size_t bytes);
  // The write of the last batch finished: its bytes and references go.
  void done_writing();

 private:
  struct Piece {
    std::size_t offset = 0;  // into owned, when body is null
    std::size_t length = 0;
    MessageBytesPtr body;  // set: the message's header block and payload
  };
  struct Batch {
    std::string owned;
    std::size_t mark = 0;  // owned bytes already covered by a piece
    std::vector<Piece> pieces;
    void seal();  // covers owned bytes since mark with a piece
    void clear();
  };

  Batch queued_, writing_;
  std::vector<boost::asio::const_buffer> buffers_;
  std::size_t next_buffer_ = 0;  // the first of buffers_ not written whole
  std::size_t next_offset_ = 0;  // bytes of it written
  std::vector<iovec> iovecs_;
};

}  // namespace jetfan
