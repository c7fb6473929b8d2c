#include "consumer_info.hpp"

#include "json_read.hpp"

namespace jetfan::jetstream {
namespace {

using detail::Json;
using detail::read;

bool read_pair(const Json& info, std::string_view key, SequencePair& out) {
  const Json* pair = detail::object_member(info, key);
  return pair == nullptr ||
         (read(*pair, "consumer_seq", out.consumer_seq) && read(*pair, "stream_seq", out.stream_seq));
}

// What servers since 2.11 add; a member of another type is left as an older server's silence.
void read_newer_features(const Json& info, const Json& config, ConsumerInfo& out) {
  if (const auto groups = config.find("priority_groups"); groups != config.end() && groups->is_array()) {
    for (const auto& group : *groups) {
      if (group.is_string()) out.priority_groups.push_back(group.get<std::string>());
    }
  }
  read(config, "priority_policy", out.priority_policy);
  read(config, "priority_timeout", out.pinned_ttl);
  read(config, "pause_until", out.pause_until);
  read(info, "paused", out.paused);
  read(info, "pause_remaining", out.pause_remaining);
  if (const auto states = info.find("priority_groups"); states != info.end() && states->is_array()) {
    for (const auto& state : *states) {
      if (!state.is_object()) continue;
      PriorityGroupState group;
      read(state, "group", group.group);
      read(state, "pinned_client_id", group.pinned_client_id);
      out.group_states.push_back(std::move(group));
    }
  }
}

}  // namespace

std::string consumer_info_subject(std::string_view stream, std::string_view consumer) {
  std::string subject = "$JS.API.CONSUMER.INFO.";
  subject.append(stream).append(".").append(consumer);
  return subject;
}

std::variant<ConsumerInfo, ApiError> parse_consumer_info(std::string_view json_text) {
  const Json info = detail::parse(json_text);
  if (!info.is_object()) return unreadable("the consumer info is not a JSON object", json_text);
  if (auto error = detail::error_in(info)) return std::move(*error);
  const Json* config = detail::object_member(info, "config");
  if (config == nullptr) return unreadable("the consumer info has no config", json_text);
  ConsumerInfo out;
  const bool typed =
      read(info, "stream_name", out.stream_name) && read(info, "name", out.name) &&
      read(*config, "durable_name", out.durable_name) && read(*config, "ack_policy", out.ack_policy) &&
      read(*config, "ack_wait", out.ack_wait) && read(*config, "max_deliver", out.max_deliver) &&
      read(*config, "max_ack_pending", out.max_ack_pending) && read(*config, "filter_subject", out.filter_subject) &&
      read(*config, "deliver_subject", out.deliver_subject) && read_pair(info, "delivered", out.delivered) &&
      read_pair(info, "ack_floor", out.ack_floor) && read(info, "num_ack_pending", out.num_ack_pending) &&
      read(info, "num_redelivered", out.num_redelivered) && read(info, "num_waiting", out.num_waiting) &&
      read(info, "num_pending", out.num_pending);
  if (!typed) return unreadable("the consumer info has a member of an unexpected type", json_text);
  read_newer_features(info, *config, out);
  return out;
}

}  // namespace jetfan::jetstream
