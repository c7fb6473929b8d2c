#include "consumer_binding.hpp"

namespace jetfan {

ConsumerFacts consumer_facts(const jetstream::ConsumerInfo& info) {
  ConsumerFacts facts;
  facts.from_server = true;
  facts.ack_policy = info.ack_policy == "none"  ? AckPolicy::kNone
                     : info.ack_policy == "all" ? AckPolicy::kAll
                                                : AckPolicy::kExplicit;
  if (info.ack_wait.count() > 0) facts.ack_wait = std::chrono::duration_cast<Duration>(info.ack_wait);
  facts.max_deliver = info.max_deliver;
  facts.max_ack_pending = info.max_ack_pending;
  facts.filter = info.filter_subject;
  facts.num_pending = info.num_pending;
  facts.num_waiting = info.num_waiting;
  facts.ack_floor = info.ack_floor.stream_seq;
  facts.delivered = info.delivered.stream_seq;
  facts.delivered_consumer_seq = info.delivered.consumer_seq;
  facts.ack_pending = info.num_ack_pending;
  facts.priority_policy = info.priority_policy;
  facts.priority_groups = info.priority_groups;
  facts.priority_timeout = std::chrono::duration_cast<Duration>(info.pinned_ttl);
  facts.paused = info.paused;
  facts.pause_until = info.pause_until;
  return facts;
}

BindingVerdict judge_binding(const Config& config, const ConsumerInfoAnswer& answer) {
  const auto& consumer = config.consumer;
  const std::string named = "consumer \"" + consumer.durable + "\" of stream \"" + consumer.stream + "\"";
  const std::string where = config.file + ": consumer: ";
  BindingVerdict verdict;
  if (const auto* info = std::get_if<jetstream::ConsumerInfo>(&answer)) {
    if (!info->deliver_subject.empty()) {
      verdict.kind = BindingVerdict::Kind::kRefused;
      verdict.message = where + named + " is a push consumer (deliver subject \"" + info->deliver_subject +
                        "\"); jetfan reads a pull consumer";
      return verdict;
    }
    verdict.facts = consumer_facts(*info);
    return verdict;
  }
  if (const auto* error = std::get_if<jetstream::ApiError>(&answer)) {
    if (error->err_code == jetstream::kStreamNotFound) {
      verdict.kind = BindingVerdict::Kind::kRefused;
      verdict.message = where + "stream \"" + consumer.stream + "\" does not exist (" + error->describe() +
                        "). Check consumer.stream: it names the stream the module's durable consumer belongs to. "
                        "jetfan never creates streams or consumers; the controller does.";
      return verdict;
    }
    if (error->err_code == jetstream::kConsumerNotFound) {
      verdict.kind = BindingVerdict::Kind::kRefused;
      verdict.message = where + named + " does not exist (" + error->describe() +
                        "). Check consumer.durable. jetfan binds the module's existing durable consumer and never "
                        "creates one; its controller creates it.";
      return verdict;
    }
    verdict.kind = BindingVerdict::Kind::kUnread;
    verdict.message = "nats: cannot read the info of " + named + ": " + error->describe();
    return verdict;
  }
  const auto& none = std::get<NoAnswer>(answer);
  if (none.no_responders) {
    verdict.kind = BindingVerdict::Kind::kNotAvailable;
    verdict.message = "nats: JetStream does not answer (no responders for the info of " + named +
                      "): is JetStream enabled there, and has the server finished starting? Exiting with 75 (a "
                      "temporary failure), so that systemd starts jetfan again after a delay.";
    return verdict;
  }
  verdict.kind = BindingVerdict::Kind::kUnread;
  verdict.message = "nats: cannot read the info of " + named + ": " + none.why;
  return verdict;
}

}  // namespace jetfan
