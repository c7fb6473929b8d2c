#pragma once
// JetStreamAdmin: what jetfan asks of JetStream before it serves, waiting for each answer: the
// consumer's info (to bind it) and which streams capture the handlers' dead-letter subjects. It
// asks; what the answers mean is decided by pure code (config/consumer_binding.hpp,
// jetstream/stream_names.hpp).
//
// It binds the consumer named in the config and never creates, updates or deletes a stream or a
// consumer.
//
// Thread: the io_context thread, before the Dispatcher starts. `config` and `nats` must outlive it.

#include <optional>
#include "config.hpp"

#include "consumer_binding.hpp"
#include "consumer_facts.hpp"
#include "nats_blocking.hpp"

namespace jetfan {

class JetStreamAdmin {
 public:
  JetStreamAdmin(const Config& config, NatsBlocking& nats) : config_(config), nats_(nats) {}

  // Reads the consumer's info. Throws StartupError with kExitConfig when the stream or the consumer
  // does not exist or it is a push consumer, and kExitTempFail when JetStream does not answer.
  // Facts stay empty (logged) when the info cannot be read otherwise (config/consumer_binding.hpp).
  ConsumerFacts bind_consumer();

  // Reads the consumer's info again while serving (a pinned_client reader taking over): the facts
  // when the server gave them, nullopt (logged) otherwise. Never throws.
  std::optional<ConsumerFacts> read_facts();

  // Asks the server ($JS.API.STREAM.NAMES with a subject filter) which stream captures each
  // handler's dead_letter subject. Throws StartupError (kExitConfig) naming handler and subject
  // when none does: jetfan never creates streams. Warns, and goes on, when the server cannot be
  // asked (no permission, no answer), or when the consumer's own stream captures it.
  void check_dead_letter_subjects();

 private:
  BindingVerdict ask_consumer_info();

  const Config& config_;
  NatsBlocking& nats_;
};

}  // namespace jetfan
