#pragma once
// JetStreamAdmin: what jetfan asks of JetStream before it serves, waiting for each answer: the
// consumer's info (to bind it), which streams capture the handlers' dead-letter subjects, and the
// streams the handlers publish to (config/duplicate_window.hpp). It
// asks; what the answers mean is decided by pure code (config/consumer_binding.hpp,
// jetstream/stream_names.hpp).
//
// It binds the consumer named in the config and never creates, updates or deletes a stream or a
// consumer.
//
// Thread: the io_context thread, before the Dispatcher starts. `config` and `nats` must outlive it.

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "config.hpp"

#include "consumer_binding.hpp"
#include "consumer_facts.hpp"
#include "nats_blocking.hpp"

namespace jetfan {

// What a check found: a line per thing found right (a stream whose duplicate window is long
// enough, the ledger's bucket), and one per problem (no stream, a window too short, a question
// the server did not answer, a bucket's setting that costs).
struct AdminReport {
  std::vector<std::string> ok;
  std::vector<std::string> warnings;
};

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

  // For each handler's publish.subjects: which streams capture them ($JS.API.STREAM.NAMES), and
  // whether each one's duplicate_window ($JS.API.STREAM.INFO) outlasts a message's redeliveries
  // (`ack_wait`, the consumer's `max_deliver`, the handler's retry.max_attempts). Never throws: a
  // publish to a subject no stream captures is answered PUBERR no-stream, not fatal to jetfan.
  AdminReport check_publish_subjects(Duration ack_wait, std::int64_t max_deliver);

  // The confirmation ledger's bucket (config.ledger; its stream KV_<bucket>). Throws StartupError
  // (kExitConfig) when the stream does not exist, naming the command that makes it: jetfan never
  // creates it. Warns of settings that cost: a history above 1 (old records kept), no TTL (records
  // of messages the server gave up on stay). A server that cannot be asked is a warning too: the
  // ledger is off the critical path. Precondition: config.ledger is set.
  AdminReport check_ledger_bucket();

 private:
  BindingVerdict ask_consumer_info();
  // A request's answer body (index 0), or why there is none (index 1).
  std::variant<std::string, std::string> request(const std::string& subject, const std::string& body);
  // The streams capturing `subject` (maybe none), or why the server could not say.
  std::variant<std::vector<std::string>, std::string> streams_capturing(const std::string& subject);
  // The stream's duplicate_window, or why the server could not say.
  std::variant<Duration, std::string> duplicate_window_of(const std::string& stream);

  const Config& config_;
  NatsBlocking& nats_;
};

}  // namespace jetfan
