#pragma once
// SpentMessages: natsMsg handles jetfan is done with, destroyed together after the io_context's
// current turn instead of one at a time.
//
// cnats 3.4.1 does not free a message in natsMsg_Destroy: it hands it to its library-wide garbage
// collector thread (natsGC_collect) and wakes that thread whenever it sleeps. Destroyed one at a
// time at jetfan's rates, each message was a futex wake and a context switch for that thread, and
// lock contention with it. Destroyed together, a turn's messages wake it once. (bench/publish.sh's
// P-C, see docs/BENCHMARKS.md: about a quarter fewer system calls and jetfan CPU per publish.)
//
// Thread: the io_context's thread only, with the cnats library open (nats_Open). Ownership: add()
// takes the message. What is still waiting when this is destroyed is destroyed then; the drain
// posted to the io_context holds only the shared list, so it may run (and find it empty) after
// this is gone.

#include <nats/nats.h>
#include <boost/asio/io_context.hpp>

#include <memory>
#include <vector>

#include "nats_handles.hpp"

namespace jetfan {

class SpentMessages {
 public:
  explicit SpentMessages(boost::asio::io_context& io);
  ~SpentMessages();
  SpentMessages(const SpentMessages&) = delete;
  SpentMessages& operator=(const SpentMessages&) = delete;

  // Destroyed once the current handler and those already queued have run.
  void add(NatsMsgPtr message);
  // Waiting to be destroyed (for tests).
  std::size_t waiting() const { return messages_->size(); }

 private:
  using List = std::vector<natsMsg*>;
  static void destroy_all(List& messages);

  boost::asio::io_context& io_;
  std::shared_ptr<List> messages_ = std::make_shared<List>();
};

}  // namespace jetfan
