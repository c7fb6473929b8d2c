// Dispatcher, continued: dead letters. The core decides when a handler gives a message up and
// when a failed publish is tried again; here they are published, answered and logged. The header
// names are in dead_letters.hpp.

#include <spdlog/spdlog.h>

#include "dispatcher.hpp"

namespace jetfan {
namespace {

// JetStream answers a publish in milliseconds; one unanswered this long is lost (the server went
// away between the publish and its answer) and is tried again.
constexpr Duration kPublishTimeout{5000};

// The core names a redrive's dead letter by the redrive's id with this bit set (dispatch_core.hpp).
constexpr std::uint64_t kRedriveKey = std::uint64_t{1} << 63;

// As Dispatcher::warn_limited, whose template lives in dispatcher.cpp.
void warn_rate_limited(LogRateLimiter& limiter, const std::string& kind, TimePoint now, std::string line,
                       std::string_view event, LogFields fields) {
  const auto verdict = limiter.allow(kind, now);
  if (!verdict.log) return;
  if (verdict.suppressed_before > 0) {
    line += fmt::format(" ({} more like it were not logged: {})", verdict.suppressed_before, kind);
  }
  log_warn(event, fields, "{}", line);
}

}  // namespace

void Dispatcher::publish_dead_letter(const Effect& effect, const Stored& stored) {
  const HandlerSettings& handler = config_.handlers.at(effect.handler);
  DeadLetterFacts facts;
  facts.handler = handler.name;
  facts.reason = jetfan::describe(effect.reason);
  facts.attempts = effect.reason.attempts;
  facts.subject = stored.message->subject();
  facts.stream = config_.consumer.stream;
  facts.stream_seq = stored.stream_seq;
  facts.consumer = config_.consumer.durable;
  facts.deliveries = stored.deliveries;
  facts.published_ns = stored.published_ns;
  if (const auto published = core_.budget().find(effect.publish); published && published->seq >= kRedriveKey) {
    facts.redriven_from = published->seq - kRedriveKey;
  }
  const std::string headers = dead_letter_headers(stored.message->headers(), facts);
  if (!upstream_.publish(effect.publish, handler.dead_letter_subject, headers, stored.message->payload())) {
    unsent_publishes_.push_back(effect.publish);
    return;
  }
  publishes_.sent(effect.publish, time_.now());
  log_debug("dead_letter.publishing",
            {{"handler", handler.name},
             {"seq", stored.stream_seq},
             {"subject", handler.dead_letter_subject},
             {"reason", facts.reason}},
            "handler \"{}\": publishing stream seq {} to dead-letter subject \"{}\" ({})", handler.name,
            stored.stream_seq, handler.dead_letter_subject, facts.reason);
}

void Dispatcher::report_gave_up(const Effect& effect, const Stored& stored) {
  const std::string& name = config_.handlers.at(effect.handler).name;
  warn_rate_limited(
      warnings_, "handler \"" + name + "\" used up its retry budget (no dead_letter: TERM)", time_.now(),
      fmt::format(
          "handler \"{}\": stream seq {} (subject \"{}\"): {}. It has no dead_letter subject, so this is a TERM "
          "for it: it gets the message no more, and the server is told +TERM once every other handler settled.",
          name, stored.stream_seq, stored.message->subject(), jetfan::describe(effect.reason)),
      "retry.used_up", {{"handler", name}, {"seq", stored.stream_seq}, {"reason", jetfan::describe(effect.reason)}});
}

void Dispatcher::on_published(std::uint64_t id, const PublishResult& result) {
  JETFAN_ON_IO_THREAD(thread_);
  const TimePoint now = batch_now();
  // An answer after its publish was given up on: that dead letter is being tried again already.
  if (!publishes_.answered(id)) return;
  if (!result.stored) {
    publish_failed(id, result.error);
    return;
  }
  const auto published = core_.budget().find(id);
  if (published && published->seq >= kRedriveKey) {
    log_info("dead_letter.stored_again",
             {{"handler", config_.handlers.at(published->handler).name},
              {"dead_letter", published->seq - kRedriveKey},
              {"reason", jetfan::describe(published->reason)},
              {"stream", result.stream},
              {"stored_seq", result.stream_seq}},
             "handler \"{}\": redriven dead letter {} dead-lettered anew ({}): stored in stream \"{}\" at seq {}",
             config_.handlers.at(published->handler).name, published->seq - kRedriveKey,
             jetfan::describe(published->reason), result.stream, result.stream_seq);
  } else if (published) {
    log_info("dead_letter.stored",
             {{"handler", config_.handlers.at(published->handler).name},
              {"seq", published->seq},
              {"reason", jetfan::describe(published->reason)},
              {"stream", result.stream},
              {"stored_seq", result.stream_seq}},
             "handler \"{}\": stream seq {} dead-lettered ({}): stored in stream \"{}\" at seq {}",
             config_.handlers.at(published->handler).name, published->seq, jetfan::describe(published->reason),
             result.stream, result.stream_seq);
  }
  core_.dead_letter_stored(id, now);
}

void Dispatcher::publish_failed(std::uint64_t id, std::string_view why) {
  const auto published = core_.budget().find(id);
  if (!published) return;
  const HandlerSettings& handler = config_.handlers.at(published->handler);
  warn_rate_limited(
      warnings_, "dead letters of handler \"" + handler.name + "\" not stored", time_.now(),
      fmt::format("handler \"{}\": the dead letter of stream seq {} was not stored on subject \"{}\": {}. The message "
                  "stays held for this handler (kept alive at the server) and the publish is tried again with backoff.",
                  handler.name, published->seq, handler.dead_letter_subject, why),
      "dead_letter.not_stored",
      {{"handler", handler.name}, {"seq", published->seq}, {"subject", handler.dead_letter_subject}, {"reason", why}});
  core_.dead_letter_failed(id, time_.now());
}

void Dispatcher::fail_unsent_publishes() {
  if (unsent_publishes_.empty()) return;
  std::vector<std::uint64_t> unsent;
  unsent.swap(unsent_publishes_);
  for (const std::uint64_t id : unsent) publish_failed(id, "it could not be sent (not connected to the server)");
}

void Dispatcher::fail_overdue_publishes(TimePoint now) {
  const auto overdue = publishes_.overdue(now, kPublishTimeout);
  for (const std::uint64_t id : overdue) publish_failed(id, "no answer from JetStream in time");
  if (!overdue.empty()) arm_wakeup();
}

}  // namespace jetfan
