#pragma once
// ArrivalObserver: what the Dispatcher tells an observer about arriving messages. The rare cases
// (no recipient, unroutable) are always told; a tail record only while tailing() is true, so a
// jetfan nobody tails pays one load and one branch per message for it.
//
// Thread: the io_context thread, inside Dispatcher's handling of an arrival. The observer must not
// call back into the Dispatcher.

#include <string_view>

#include "tail_record.hpp"

namespace jetfan {

class ArrivalObserver {
 public:
  bool tailing() const { return tailing_; }

  virtual void on_tail(const TailItem& item) = 0;
  virtual void on_no_recipient(std::string_view key) = 0;
  virtual void on_unroutable(std::string_view subject) = 0;

 protected:
  ~ArrivalObserver() = default;
  bool tailing_ = false;
};

}  // namespace jetfan
