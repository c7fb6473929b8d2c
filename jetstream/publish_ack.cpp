#include "publish_ack.hpp"

#include "json_read.hpp"

namespace jetfan::jetstream {

std::variant<PublishAck, ApiError> parse_publish_ack(std::string_view json_text) {
  const auto answer = detail::parse(json_text);
  if (!answer.is_object()) return unreadable("an answer that is not JetStream's acknowledgement", json_text);
  if (auto error = detail::error_in(answer)) return std::move(*error);
  PublishAck out;
  if (!answer.contains("seq") || !detail::read(answer, "seq", out.seq) || !detail::read(answer, "stream", out.stream) ||
      !detail::read(answer, "duplicate", out.duplicate) || !detail::read(answer, "domain", out.domain)) {
    return unreadable("an answer that is not JetStream's acknowledgement", json_text);
  }
  return out;
}

}  // namespace jetfan::jetstream
