#include "connect_check.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <string>

#include "jetstream_admin.hpp"
#include "jetstream_reader.hpp"
#include "message_bytes.hpp"
#include "serve_settings.hpp"
#include "startup_error.hpp"

namespace jetfan {

namespace {

void say(std::FILE* out, const char* verdict, const std::string& what) {
  std::fprintf(out, "%-4s %s\n", verdict, what.c_str());
}

}  // namespace

int run_connect_check(const Config& config, std::FILE* out, std::chrono::seconds connect_for) {
  boost::asio::io_context io;
  // The reader waits between attempts by running `io`: with nothing else to run it would not wait.
  const auto keep_waiting = boost::asio::make_work_guard(io);
  MessageBytesArena arena;
  JetStreamReader reader(io, config, arena);
  std::string servers;
  for (const auto& server : config.nats.servers) servers += (servers.empty() ? "" : ", ") + server;
  const auto give_up = std::chrono::steady_clock::now() + connect_for;
  try {
    // serve waits for ever for a server; a check says what it found within its time.
    if (!reader.connect([&] { return std::chrono::steady_clock::now() >= give_up; })) {
      say(out, "FAIL",
          "nats: no server of nats.servers (" + servers + ") answered within " + std::to_string(connect_for.count()) +
              " s: is it running, and may this machine reach it? (serve would go on trying)");
      return kExitUnavailable;
    }
  } catch (const StartupError& e) {
    say(out, "FAIL", e.what());
    return e.exit_code();
  }
  say(out, "ok", "nats: connected to " + servers + " with the configured credentials");

  int status = kExitOk;
  auto failed = [&](const StartupError& e) {
    say(out, "FAIL", e.what());
    if (status == kExitOk) status = e.exit_code();
  };
  JetStreamAdmin admin(config, reader);
  ConsumerFacts facts;
  try {
    facts = admin.bind_consumer();
    if (facts.from_server) {
      say(out, "ok",
          "consumer \"" + config.consumer.durable + "\" of stream \"" + config.consumer.stream +
              "\": a pull consumer, " + "ack policy " + to_string(*facts.ack_policy) + ", MaxDeliver " +
              std::to_string(facts.max_deliver) + ", MaxAckPending " + std::to_string(facts.max_ack_pending) +
              ", filter \"" + facts.filter + "\", " + std::to_string(facts.num_pending) + " pending");
    } else {
      say(out, "warn",
          "consumer \"" + config.consumer.durable +
              "\": its info cannot be read (see the log line above); serve "
              "would use consumer.ack_policy");
    }
  } catch (const StartupError& e) {
    failed(e);
  }
  try {
    admin.check_dead_letter_subjects();
    for (const auto& handler : config.handlers) {
      if (!handler.dead_letter_subject.empty()) {
        say(out, "ok",
            "handler \"" + handler.name + "\": a stream captures its dead-letter subject \"" +
                handler.dead_letter_subject + "\"");
      }
    }
  } catch (const StartupError& e) {
    failed(e);
  }
  if (config.ledger) {
    try {
      const AdminReport bucket = admin.check_ledger_bucket();
      for (const auto& line : bucket.ok) say(out, "ok", line);
      for (const auto& line : bucket.warnings) say(out, "warn", line);
    } catch (const StartupError& e) {
      failed(e);
    }
  }
  if (status == kExitOk) {
    const ServeSettingsResult derived = derive_serve_settings(config, facts);
    if (!derived.settings) {
      say(out, "FAIL", "nats: " + derived.error);
      status = kExitConfig;
    } else {
      for (const auto& warning : derived.settings->warnings) say(out, "warn", warning);
      const AdminReport targets =
          admin.check_publish_subjects(derived.settings->ack_wait, derived.settings->core.max_deliver);
      for (const auto& line : targets.ok) say(out, "ok", line);
      for (const auto& line : targets.warnings) say(out, "warn", line);
      say(out, "ok",
          "serve would hold at most " + std::to_string(derived.settings->pull.max_held) + " messages" +
              (derived.settings->pin ? ", as the pinned client of its priority group (a standby may wait beside it)"
                                     : ""));
    }
  }
  if (facts.num_waiting > 0) {
    say(out, "warn",
        std::to_string(facts.num_waiting) +
            " pull request(s) wait at the consumer now: a reader is there. If this module's jetfan is not "
            "serving, another client reads the durable and would split its messages with jetfan: stop it first");
  } else if (facts.from_server) {
    say(out, "ok", "no reader waits at the consumer now");
  }
  if (facts.paused) say(out, "warn", "the consumer is paused until " + facts.pause_until + ": nothing flows before");
  reader.close(Duration(1000));
  return status;
}

}  // namespace jetfan
