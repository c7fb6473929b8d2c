#include "nats_headers.hpp"

#include "nats_header.hpp"
#include "protocol.hpp"

namespace jetfan {

HeaderList parse_headers(std::string_view block) {
  HeaderList headers;
  proto::HeaderFields fields(block);
  proto::HeaderField field;
  while (fields.next(field)) headers.emplace_back(std::string(field.name), std::string(field.value));
  return headers;
}

const std::string* find_header(const HeaderList& headers, std::string_view name) {
  for (const auto& [key, value] : headers) {
    if (proto::equals_ignoring_case(key, name)) return &value;
  }
  return nullptr;
}

}  // namespace jetfan
