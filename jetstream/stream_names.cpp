#include "stream_names.hpp"

#include "json_read.hpp"

namespace jetfan::jetstream {

std::string stream_names_request(std::string_view subject) {
  return detail::Json{{"subject", std::string(subject)}}.dump();
}

std::variant<StreamNames, ApiError> parse_stream_names(std::string_view json_text) {
  const auto answer = detail::parse(json_text);
  if (!answer.is_object()) return unreadable("not a JSON object", json_text);
  if (auto error = detail::error_in(answer)) return std::move(*error);
  StreamNames out;
  if (!detail::read(answer, "total", out.total)) return unreadable("a total that is not a number", json_text);
  const auto streams = answer.find("streams");
  if (streams == answer.end() || streams->is_null()) return out;
  if (!streams->is_array()) return unreadable("streams that are not a list", json_text);
  for (const auto& name : *streams) {
    if (!name.is_string()) return unreadable("a stream name that is not a string", json_text);
    out.streams.push_back(name.get<std::string>());
  }
  return out;
}

}  // namespace jetfan::jetstream
