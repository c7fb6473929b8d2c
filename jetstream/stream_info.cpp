#include "stream_info.hpp"

#include "json_read.hpp"

namespace jetfan::jetstream {

std::string stream_info_subject(std::string_view stream) { return "$JS.API.STREAM.INFO." + std::string(stream); }

std::variant<StreamInfo, ApiError> parse_stream_info(std::string_view json_text) {
  const auto answer = detail::parse(json_text);
  if (!answer.is_object()) return unreadable("not a JSON object", json_text);
  if (auto error = detail::error_in(answer)) return std::move(*error);
  const detail::Json* config = detail::object_member(answer, "config");
  if (config == nullptr) return unreadable("no config", json_text);
  StreamInfo out;
  if (!detail::read(*config, "name", out.name)) return unreadable("a name that is not a string", json_text);
  if (!detail::read(*config, "duplicate_window", out.duplicate_window)) {
    return unreadable("a duplicate_window that is not a number", json_text);
  }
  if (!detail::read(*config, "max_msgs_per_subject", out.max_msgs_per_subject) ||
      !detail::read(*config, "max_age", out.max_age) || !detail::read(*config, "num_replicas", out.num_replicas)) {
    return unreadable("a max_msgs_per_subject, max_age or num_replicas that is not a number", json_text);
  }
  if (const auto subjects = config->find("subjects"); subjects != config->end() && subjects->is_array()) {
    for (const auto& subject : *subjects) {
      if (subject.is_string()) out.subjects.push_back(subject.get<std::string>());
    }
  }
  return out;
}

}  // namespace jetfan::jetstream
