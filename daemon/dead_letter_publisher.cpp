// The why is in dead_letter_publisher.hpp; the header names are in dead_letters.hpp.

#include <spdlog/spdlog.h>

#include "dead_letter_publisher.hpp"
#include "redrive_table.hpp"

namespace jetfan {
namespace {

// JetStream answers a publish in milliseconds; one unanswered this long is lost (the server went
// away between the publish and its answer) and is tried again.
constexpr Duration kPublishTimeout{5000};

}  // namespace

void DeadLetterPublisher::note_reason(std::size_t handler, std::uint64_t seq, bool termed, std::string_view reason) {
  if (handler >= config_.handlers.size() || config_.handlers[handler].dead_letter_subject.empty()) return;
  const ReasonKey key{handler, seq};
  if (reason.empty()) {
    reasons_.erase(key);
    return;
  }
  const std::uint64_t stamp = ++reason_stamp_;
  reasons_.insert_or_assign(key, Said{termed, std::string(reason.substr(0, kMaxReasonBytes)), stamp});
  reason_order_.push_back(Noted{key, stamp});
  // An order entry counts only while its note is the one it was made for: a note erased (its dead
  // letter stored, or a NAK without words) or noted again leaves the old entry stale.
  const auto live = [this](const Noted& entry) {
    const auto found = reasons_.find(entry.key);
    return found != reasons_.end() && found->second.stamp == entry.stamp;
  };
  while (reasons_.size() > kMaxReasons) {
    if (live(reason_order_.front())) reasons_.erase(reason_order_.front().key);
    reason_order_.pop_front();
  }
  if (reason_order_.size() > 2 * kMaxReasons) {
    std::erase_if(reason_order_, [&live](const Noted& entry) { return !live(entry); });
  }
}

std::string DeadLetterPublisher::reason_text(std::size_t handler, std::uint64_t seq, const GiveUpReason& reason) const {
  const auto noted = reasons_.find({handler, seq});
  if (noted == reasons_.end()) return jetfan::describe(reason);
  // The handler's words explain the give-up only if they came with its last word on the message.
  const bool theirs = reason.termed ? noted->second.termed : !noted->second.termed && reason.last == FailCause::kNak;
  if (!theirs) return jetfan::describe(reason);
  return jetfan::describe(reason) + ": " + noted->second.reason;
}

void DeadLetterPublisher::publish(const Effect& effect, const HeldMessage& stored, TimePoint now) {
  const HandlerSettings& handler = config_.handlers.at(effect.handler);
  DeadLetterFacts facts;
  facts.handler = handler.name;
  facts.reason = reason_text(effect.handler, stored.stream_seq, effect.reason);
  facts.attempts = effect.reason.attempts;
  facts.subject = stored.message->subject();
  facts.stream = config_.consumer.stream;
  facts.stream_seq = stored.stream_seq;
  facts.consumer = config_.consumer.durable;
  facts.deliveries = stored.deliveries;
  facts.published_ns = stored.published_ns;
  if (const auto published = core_.budget().find(effect.publish);
      published && RedriveTable::is_redrive(published->seq)) {
    facts.redriven_from = RedriveTable::id_of(published->seq);
  }
  const std::string headers = dead_letter_headers(stored.message->headers(), facts);
  if (!upstream_.publish(effect.publish, handler.dead_letter_subject, headers, stored.message->payload())) {
    unsent_.push_back(effect.publish);
    return;
  }
  pending_.sent(effect.publish, now);
  log_debug("dead_letter.publishing",
            {{"handler", handler.name},
             {"seq", stored.stream_seq},
             {"subject", handler.dead_letter_subject},
             {"reason", facts.reason}},
            "handler \"{}\": publishing stream seq {} to dead-letter subject \"{}\" ({})", handler.name,
            stored.stream_seq, handler.dead_letter_subject, facts.reason);
}

void DeadLetterPublisher::on_published(std::uint64_t id, const PublishResult& result, TimePoint now) {
  // An answer after its publish was given up on: that dead letter is being tried again already.
  if (!pending_.answered(id)) return;
  if (!result.stored) {
    failed(id, result.error, now);
    return;
  }
  const auto published = core_.budget().find(id);
  if (published && RedriveTable::is_redrive(published->seq)) {
    log_info("dead_letter.stored_again",
             {{"handler", config_.handlers.at(published->handler).name},
              {"dead_letter", RedriveTable::id_of(published->seq)},
              {"reason", jetfan::describe(published->reason)},
              {"stream", result.stream},
              {"stored_seq", result.stream_seq}},
             "handler \"{}\": redriven dead letter {} dead-lettered anew ({}): stored in stream \"{}\" at seq {}",
             config_.handlers.at(published->handler).name, RedriveTable::id_of(published->seq),
             jetfan::describe(published->reason), result.stream, result.stream_seq);
  } else if (published) {
    const std::string reason = reason_text(published->handler, published->seq, published->reason);
    log_info("dead_letter.stored",
             {{"handler", config_.handlers.at(published->handler).name},
              {"seq", published->seq},
              {"reason", reason},
              {"stream", result.stream},
              {"stored_seq", result.stream_seq}},
             "handler \"{}\": stream seq {} dead-lettered ({}): stored in stream \"{}\" at seq {}",
             config_.handlers.at(published->handler).name, published->seq, reason, result.stream, result.stream_seq);
  }
  if (published) reasons_.erase({published->handler, published->seq});
  core_.dead_letter_stored(id, now);
}

void DeadLetterPublisher::failed(std::uint64_t id, std::string_view why, TimePoint now) {
  const auto published = core_.budget().find(id);
  if (!published) return;
  const HandlerSettings& handler = config_.handlers.at(published->handler);
  warnings_.warn(
      now, "dead letters of handler \"" + handler.name + "\" not stored", "dead_letter.not_stored",
      {{"handler", handler.name}, {"seq", published->seq}, {"subject", handler.dead_letter_subject}, {"reason", why}},
      "handler \"{}\": the dead letter of stream seq {} was not stored on subject \"{}\": {}. The message stays held "
      "for this handler (kept alive at the server) and the publish is tried again with backoff.",
      handler.name, published->seq, handler.dead_letter_subject, why);
  core_.dead_letter_failed(id, now);
}

void DeadLetterPublisher::fail_unsent(TimePoint now) {
  if (unsent_.empty()) return;
  std::vector<std::uint64_t> unsent;
  unsent.swap(unsent_);
  for (const std::uint64_t id : unsent) failed(id, "it could not be sent (not connected to the server)", now);
}

bool DeadLetterPublisher::fail_overdue(TimePoint now) {
  const auto overdue = pending_.overdue(now, kPublishTimeout);
  for (const std::uint64_t id : overdue) failed(id, "no answer from JetStream in time", now);
  return !overdue.empty();
}

void DeadLetterPublisher::connection_lost(TimePoint now) {
  for (const std::uint64_t id : pending_.take_all()) failed(id, "the connection to the server was lost", now);
}

}  // namespace jetfan
