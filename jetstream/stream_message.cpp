#include "stream_message.hpp"

#include "base64.hpp"
#include "json_read.hpp"

namespace jetfan::jetstream {

std::string msg_get_subject(std::string_view stream) { return "$JS.API.STREAM.MSG.GET." + std::string(stream); }

std::string msg_delete_subject(std::string_view stream) { return "$JS.API.STREAM.MSG.DELETE." + std::string(stream); }

std::string msg_get_next_request(std::uint64_t seq, std::string_view filter) {
  return detail::Json{{"seq", seq}, {"next_by_subj", std::string(filter.empty() ? ">" : filter)}}.dump();
}

std::string msg_get_last_request(std::string_view filter) {
  return detail::Json{{"last_by_subj", std::string(filter.empty() ? ">" : filter)}}.dump();
}

std::string msg_delete_request(std::uint64_t seq) { return detail::Json{{"seq", seq}}.dump(); }

std::variant<StoredMessage, NoMessage, ApiError> parse_msg_get(std::string_view json_text) {
  const auto answer = detail::parse(json_text);
  if (!answer.is_object()) return unreadable("not a JSON object", json_text);
  if (auto error = detail::error_in(answer)) {
    if (error->is_not_found()) return NoMessage{};
    return std::move(*error);
  }
  const auto* message = detail::object_member(answer, "message");
  if (message == nullptr) return unreadable("no message in the answer", json_text);
  StoredMessage out;
  std::string hdrs;
  std::string data;
  if (!detail::read(*message, "seq", out.seq) || out.seq == 0 || !detail::read(*message, "subject", out.subject) ||
      !message->contains("subject") || !detail::read(*message, "hdrs", hdrs) || !detail::read(*message, "data", data) ||
      !detail::read(*message, "time", out.time)) {
    return unreadable("a message without a seq or subject, or with a member of an unexpected type", json_text);
  }
  auto headers = base64_decode(hdrs);
  auto payload = base64_decode(data);
  if (!headers || !payload) return unreadable("a message whose hdrs or data is not base64", json_text);
  out.headers = std::move(*headers);
  out.payload = std::move(*payload);
  return out;
}

std::optional<ApiError> parse_msg_delete(std::string_view json_text) {
  const auto answer = detail::parse(json_text);
  if (!answer.is_object()) return unreadable("not a JSON object", json_text);
  if (auto error = detail::error_in(answer)) return error;
  bool success = false;
  if (detail::read(answer, "success", success) && success) return std::nullopt;
  return unreadable("not deleted", json_text);
}

}  // namespace jetfan::jetstream
