#include "dead_letter_stream.hpp"

#include <array>

#include <nlohmann/json.hpp>

namespace jetfan {
namespace {

// An error member, as JetStream writes them: {"error": {"code": 404, "description": "..."}}.
std::optional<ApiError> error_of(const nlohmann::json& json) {
  if (!json.contains("error")) return std::nullopt;
  const auto& error = json["error"];
  std::string what = error.is_object() ? error.value("description", std::string("an error")) : "an error";
  if (error.is_object() && error.contains("code")) what += " (" + error["code"].dump() + ")";
  return ApiError{what};
}

std::string excerpt(std::string_view text) { return std::string(text.substr(0, 200)); }

}  // namespace

std::string stream_names_request(std::string_view subject) {
  return nlohmann::json{{"subject", std::string(subject)}}.dump();
}

std::string msg_get_next_request(std::uint64_t seq, std::string_view subject) {
  return nlohmann::json{{"seq", seq}, {"next_by_subj", std::string(subject)}}.dump();
}

std::string msg_get_last_request(std::string_view subject) {
  return nlohmann::json{{"last_by_subj", std::string(subject)}}.dump();
}

std::string msg_delete_request(std::uint64_t seq) { return nlohmann::json{{"seq", seq}}.dump(); }

std::variant<std::string, ApiError> parse_stream_names(std::string_view json) {
  const auto doc = nlohmann::json::parse(json, nullptr, false);
  if (!doc.is_object()) return ApiError{"not JSON: " + excerpt(json)};
  if (auto error = error_of(doc)) return *error;
  if (doc.contains("streams") && doc["streams"].is_array()) {
    for (const auto& name : doc["streams"]) {
      if (name.is_string()) return name.get<std::string>();
    }
  }
  return ApiError{"no stream captures the subject"};
}

std::variant<StoredLetter, NoMessage, ApiError> parse_msg_get(std::string_view json) {
  const auto doc = nlohmann::json::parse(json, nullptr, false);
  if (!doc.is_object()) return ApiError{"not JSON: " + excerpt(json)};
  if (doc.contains("error")) {
    const auto& error = doc["error"];
    if (error.is_object() && error.value("code", 0) == 404) return NoMessage{};
    return *error_of(doc);
  }
  if (!doc.contains("message") || !doc["message"].is_object()) return ApiError{"no message in " + excerpt(json)};
  const auto& message = doc["message"];
  StoredLetter letter;
  letter.seq = message.value("seq", std::uint64_t{0});
  letter.subject = message.value("subject", std::string());
  letter.time = message.value("time", std::string());
  const auto hdrs = base64_decode(message.value("hdrs", std::string()));
  const auto data = base64_decode(message.value("data", std::string()));
  if (letter.seq == 0 || !hdrs || !data) return ApiError{"a message that cannot be read: " + excerpt(json)};
  letter.headers = *hdrs;
  letter.payload = *data;
  return letter;
}

std::optional<std::string> parse_msg_delete(std::string_view json) {
  const auto doc = nlohmann::json::parse(json, nullptr, false);
  if (!doc.is_object()) return "not JSON: " + excerpt(json);
  if (auto error = error_of(doc)) return error->what;
  if (doc.value("success", false)) return std::nullopt;
  return "not deleted: " + excerpt(json);
}

std::optional<std::string> base64_decode(std::string_view text) {
  static constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::array<int, 256> value{};
  value.fill(-1);
  for (std::size_t i = 0; i < kAlphabet.size(); ++i)
    value[static_cast<unsigned char>(kAlphabet[i])] = static_cast<int>(i);
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  std::string out;
  out.reserve(text.size() * 3 / 4);
  std::uint32_t bits = 0;
  int count = 0;
  for (const char c : text) {
    const int v = value[static_cast<unsigned char>(c)];
    if (v < 0) return std::nullopt;
    bits = (bits << 6) | static_cast<std::uint32_t>(v);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out.push_back(static_cast<char>((bits >> count) & 0xff));
    }
  }
  if (count >= 6) return std::nullopt;  // one character left over: no whole byte
  return out;
}

}  // namespace jetfan
