#include "held_messages.hpp"

namespace jetfan {

void HeldMessages::trim(HeldMessage& held, MessageBytesArena& arena) {
  // The key points into the subject: it is kept, at the same place in the copy.
  const std::string_view subject = held.message->subject();
  const bool key_in_subject = !held.key.empty() && held.key.data() >= subject.data() &&
                              held.key.data() + held.key.size() <= subject.data() + subject.size();
  const std::size_t key_at = key_in_subject ? static_cast<std::size_t>(held.key.data() - subject.data()) : 0;
  MessageBytesPtr trimmed = subject_and_reply_of(*held.message, arena);
  held.key = key_in_subject ? trimmed->subject().substr(key_at, held.key.size()) : std::string_view{};
  held.message = std::move(trimmed);
}

}  // namespace jetfan
