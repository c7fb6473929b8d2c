#pragma once
// What jetfan makes of the consumer's info at startup ($JS.API.CONSUMER.INFO.<stream>.<durable>,
// jetstream/consumer_info.hpp): the facts it serves with, or why it cannot serve. Pure: the daemon
// asks the server (daemon/jetstream_admin.hpp) and acts on the verdict.
//
//   - the info: a pull consumer's facts; a push consumer is refused.
//   - the server says the stream is not there (err_code 10059), or the consumer is not (10014):
//     refused, with the hint for that case (jetfan never creates either).
//   - no responders: JetStream is not there (yet): worth trying again later.
//   - anything else (a timeout, most often an account that may not read consumer info): served
//     without facts, so consumer.ack_policy decides (config/serve_settings.hpp); logged.

#include <string>
#include <variant>

#include "config.hpp"
#include "consumer_facts.hpp"
#include "consumer_info.hpp"

namespace jetfan {

// The answer to the startup request: the info, the server's error, or why there was no answer.
struct NoAnswer {
  bool no_responders = false;  // nobody serves $JS.API here (JetStream off, or not started)
  std::string why;             // the client's words
};
using ConsumerInfoAnswer = std::variant<jetstream::ConsumerInfo, jetstream::ApiError, NoAnswer>;

struct BindingVerdict {
  enum class Kind {
    kBound,         // facts are the server's
    kUnread,        // facts are empty: serve on the config's word; `message` is the warning
    kRefused,       // the config or the consumer is wrong: exit 78 with `message`
    kNotAvailable,  // JetStream does not answer: exit 75 with `message`
  };
  Kind kind = Kind::kBound;
  ConsumerFacts facts;
  std::string message;
};

// The facts a consumer's info gives (from_server set).
ConsumerFacts consumer_facts(const jetstream::ConsumerInfo& info);

BindingVerdict judge_binding(const Config& config, const ConsumerInfoAnswer& answer);

}  // namespace jetfan
