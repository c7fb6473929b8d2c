#include "spent_messages.hpp"

#include <boost/asio/post.hpp>

namespace jetfan {

SpentMessages::SpentMessages(boost::asio::io_context& io) : io_(io) {}

SpentMessages::~SpentMessages() { destroy_all(*messages_); }

void SpentMessages::add(NatsMsgPtr message) {
  if (!message) return;
  messages_->push_back(message.release());
  if (messages_->size() > 1) return;  // a drain is posted already
  boost::asio::post(io_, [messages = messages_] { destroy_all(*messages); });
}

void SpentMessages::destroy_all(List& messages) {
  for (natsMsg* message : messages) natsMsg_Destroy(message);
  messages.clear();
}

}  // namespace jetfan
