#include "consumer_info.hpp"

#include <nlohmann/json.hpp>

namespace jetfan {

std::variant<ServerConsumerView, std::string> parse_consumer_info(std::string_view json_text) {
  using nlohmann::json;
  const json doc = json::parse(json_text.begin(), json_text.end(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return std::string("the server's consumer info is not a JSON object");
  if (const auto error = doc.find("error"); error != doc.end() && error->is_object()) {
    return "the server says: " + error->value("description", std::string("error")) + " (" +
           std::to_string(error->value("code", 0)) + ")";
  }
  // value() throws when a member has another type than asked; a server that says something odd
  // must not stop jetfan.
  try {
    ServerConsumerView view;
    view.num_pending = doc.value("num_pending", std::uint64_t{0});
    view.num_ack_pending = doc.value("num_ack_pending", std::uint64_t{0});
    view.num_redelivered = doc.value("num_redelivered", std::uint64_t{0});
    view.num_waiting = doc.value("num_waiting", std::uint64_t{0});
    if (const auto delivered = doc.find("delivered"); delivered != doc.end() && delivered->is_object()) {
      view.delivered_stream_seq = delivered->value("stream_seq", std::uint64_t{0});
    }
    if (const auto floor = doc.find("ack_floor"); floor != doc.end() && floor->is_object()) {
      view.ack_floor_stream_seq = floor->value("stream_seq", std::uint64_t{0});
    }
    const auto config = doc.find("config");
    if (config == doc.end() || !config->is_object()) return std::string("the server's consumer info has no config");
    view.ack_policy = config->value("ack_policy", std::string("explicit"));
    view.ack_wait_seconds = static_cast<double>(config->value("ack_wait", std::int64_t{0})) / 1e9;
    view.max_deliver = config->value("max_deliver", std::int64_t{-1});
    view.max_ack_pending = config->value("max_ack_pending", std::int64_t{-1});
    return view;
  } catch (const json::exception& e) {
    return std::string("the server's consumer info has a member of an unexpected type: ") + e.what();
  }
}

std::string read_newer_consumer_features(std::string_view json_text, ConsumerFacts& facts) {
  using nlohmann::json;
  const json doc = json::parse(json_text.begin(), json_text.end(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return "the server's consumer info is not a JSON object";
  if (const auto error = doc.find("error"); error != doc.end() && error->is_object()) {
    return "the server says: " + error->value("description", std::string("error"));
  }
  const auto config = doc.find("config");
  if (config == doc.end() || !config->is_object()) return "the server's consumer info has no config";
  if (const auto policy = config->find("priority_policy"); policy != config->end() && policy->is_string()) {
    facts.priority_policy = policy->get<std::string>();
  }
  if (const auto groups = config->find("priority_groups"); groups != config->end() && groups->is_array()) {
    for (const auto& group : *groups) {
      if (group.is_string()) facts.priority_groups.push_back(group.get<std::string>());
    }
  }
  if (const auto paused = doc.find("paused"); paused != doc.end() && paused->is_boolean()) {
    facts.paused = paused->get<bool>();
  }
  if (const auto until = config->find("pause_until"); until != config->end() && until->is_string()) {
    facts.pause_until = until->get<std::string>();
  }
  return {};
}

}  // namespace jetfan
