#include "stream_message.hpp"

#include <nlohmann/json.hpp>

#include <optional>

#include "dead_letter_stream.hpp"  // base64_decode

namespace jetfan {
namespace {

// The server's "no message found" (JSNoMessageFoundErr).
constexpr int kNoMessageFound = 10037;

}  // namespace

std::string stream_message_request(std::uint64_t seq, std::string_view filter) {
  return nlohmann::json{{"seq", seq}, {"next_by_subj", std::string(filter.empty() ? ">" : filter)}}.dump();
}

std::variant<StreamMessage, NoStreamMessage, std::string> parse_stream_message(std::string_view json_text) {
  const auto json = nlohmann::json::parse(json_text, nullptr, false);
  if (!json.is_object()) return std::string("not a JSON object");
  if (const auto error = json.find("error"); error != json.end()) {
    if (error->is_object() && error->value("err_code", 0) == kNoMessageFound) return NoStreamMessage{};
    return error->is_object() ? error->value("description", error->dump()) : error->dump();
  }
  const auto message = json.find("message");
  if (message == json.end() || !message->is_object()) return std::string("no \"message\" in the answer");
  StreamMessage out;
  const auto seq = message->find("seq");
  const auto subject = message->find("subject");
  if (seq == message->end() || !seq->is_number_unsigned() || subject == message->end() || !subject->is_string()) {
    return std::string("the message has no \"seq\" or \"subject\"");
  }
  out.stream_seq = seq->get<std::uint64_t>();
  out.subject = subject->get<std::string>();
  if (const auto headers = message->find("hdrs"); headers != message->end() && headers->is_string()) {
    auto decoded = base64_decode(headers->get<std::string>());
    if (!decoded) return std::string("its \"hdrs\" is not base64");
    out.headers = std::move(*decoded);
  }
  return out;
}

}  // namespace jetfan
