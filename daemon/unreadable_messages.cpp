#include "unreadable_messages.hpp"

#include <chrono>

#include "dead_letters.hpp"
#include "jetstream_subject.hpp"
#include "logging.hpp"
#include "stream_message.hpp"

namespace jetfan {

namespace {

// A message made here: its strings are its own (the reply subject NUL-terminated, as the upstream
// needs it).
MessageBytesPtr own_bytes(std::string subject, std::string reply, std::string_view headers, std::string payload,
                          MessageBytesArena& arena) {
  struct Owned {
    std::string subject, reply, payload;
  };
  auto owned = std::make_unique<Owned>(Owned{std::move(subject), std::move(reply), std::move(payload)});
  MessageParts parts{BytesOwner(nullptr, [](void* p) { delete static_cast<Owned*>(p); }), owned->subject, owned->reply,
                     headers, owned->payload};
  parts.owner.reset(owned.release());
  return make_message_bytes(std::move(parts), arena);
}

}  // namespace

UnreadableMessages::UnreadableMessages(const Config& config, Upstream& upstream, MessageBytesArena& arena,
                                       UnreadableHost& host)
    : config_(config), upstream_(upstream), arena_(arena), host_(host), filter_(">") {}

void UnreadableMessages::heard(const jetstream::ConsumerInfo& info, TimePoint now) {
  filter_ = info.filter_subject.empty() ? ">" : info.filter_subject;
  search_.heard({info.delivered.consumer_seq, info.delivered.stream_seq, info.ack_floor.stream_seq});
  read_next(now);
}

void UnreadableMessages::read_next(TimePoint now) {
  if (awaiting_) return;
  const auto seq = search_.next_read();
  if (!seq) return;
  const std::uint64_t id = next_id_++;
  if (!upstream_.api_request(id | kIdBit, jetstream::msg_get_subject(config_.consumer.stream),
                             jetstream::msg_get_next_request(*seq, filter_))) {
    search_.read_failed();
    return;
  }
  awaiting_ = id;
  awaiting_seq_ = *seq;
  asked_ = now;
}

std::optional<std::string> UnreadableMessages::examine(std::uint64_t seq, Done done, TimePoint now) {
  if (examined_) return "another look at a stream sequence is under way";
  const std::uint64_t id = next_id_++;
  if (!upstream_.api_request(id | kIdBit, jetstream::msg_get_subject(config_.consumer.stream),
                             jetstream::msg_get_next_request(seq, filter_))) {
    return "not connected to NATS";
  }
  examined_ = Examined{id, seq, std::move(done), now};
  return std::nullopt;
}

void UnreadableMessages::end_examine(bool ok, const std::string& line) {
  const Done done = std::move(examined_->done);
  examined_.reset();
  if (done) done(ok, line);
}

void UnreadableMessages::examined(jetstream::StoredMessage message, TimePoint now) {
  const std::uint64_t seq = examined_->seq;
  if (message.seq != seq) {
    end_examine(false, "ERR no message at stream seq " + std::to_string(seq) + " that the consumer takes");
    return;
  }
  if (readable_subject(message.subject)) {
    end_examine(false, "ERR stream seq " + std::to_string(seq) + " has a subject the client reads (\"" +
                           escape_subject(message.subject) + "\"): nothing done");
    return;
  }
  UnreadableFound found;
  found.stream_seq = seq;
  found.subject = message.subject;
  contain(found, std::move(message), now);
  std::string outcome;
  for (const auto& kept : kept_) {
    if (kept.stream_seq == seq) outcome = kept.outcome;
  }
  end_examine(true, "OK stream seq " + std::to_string(seq) + " \"" + escape_subject(found.subject) +
                        "\": its subject cannot be read; " + outcome + " (jetfan status shows how it ends)");
}

std::vector<std::string> UnreadableMessages::list() const {
  std::vector<std::string> lines;
  for (const auto& kept : kept_) {
    lines.push_back("stream seq " + std::to_string(kept.stream_seq) + " \"" + kept.subject + "\" found " +
                    std::to_string(kept.times) + " time(s); " + kept.outcome + "; " + std::to_string(kept.handed_back) +
                    " delivery(ies) it took handed back");
  }
  return lines;
}

void UnreadableMessages::on_api_reply(std::uint64_t id, const ApiReply& reply, TimePoint now) {
  if (examined_ && (id & ~kIdBit) == examined_->id) {
    if (reply.json.empty()) {
      end_examine(false,
                  "ERR could not read stream seq " + std::to_string(examined_->seq) + ": " + std::string(reply.error));
      return;
    }
    auto parsed = jetstream::parse_msg_get(reply.json);
    if (auto* message = std::get_if<jetstream::StoredMessage>(&parsed)) {
      examined(std::move(*message), now);
    } else if (std::holds_alternative<jetstream::NoMessage>(parsed)) {
      end_examine(false, "ERR no message at stream seq " + std::to_string(examined_->seq) + " or after it");
    } else {
      end_examine(false, "ERR could not read stream seq " + std::to_string(examined_->seq) + ": " +
                             std::get<jetstream::ApiError>(parsed).describe());
    }
    return;
  }
  if (!awaiting_ || (id & ~kIdBit) != *awaiting_) return;  // late: that read was given up
  awaiting_.reset();
  if (reply.json.empty()) {
    log_warn("nats.unreadable_search_failed", {{"seq", awaiting_seq_}, {"reason", reply.error}},
             "could not read stream seq {} while looking for a message that broke the connection: {}", awaiting_seq_,
             reply.error);
    search_.read_failed();
    return;
  }
  auto parsed = jetstream::parse_msg_get(reply.json);
  if (auto* message = std::get_if<jetstream::StoredMessage>(&parsed)) {
    if (const auto found = search_.read(message->seq, message->subject)) {
      contain(*found, std::move(*message), now);
      return;
    }
  } else if (std::holds_alternative<jetstream::NoMessage>(parsed)) {
    search_.read(awaiting_seq_, std::nullopt);
  } else {
    const auto& error = std::get<jetstream::ApiError>(parsed);
    log_warn("nats.unreadable_search_failed", {{"seq", awaiting_seq_}, {"reason", error.describe()}},
             "could not read stream seq {} while looking for a message that broke the connection: {}", awaiting_seq_,
             error.describe());
    search_.read_failed();
    return;
  }
  if (!search_.searching()) {
    log_info("nats.unreadable_not_found", {{"reads", UnreadableSearch::kMaxReads}},
             "deliveries were lost with the connection, but no message with a subject the NATS client cannot read "
             "was found near them (at most {} read); if the connection keeps breaking, look with jetfan unreadable "
             "--seq N",
             UnreadableSearch::kMaxReads);
    return;
  }
  read_next(now);
}

void UnreadableMessages::reconnected() {
  search_.reconnected();
  if (examined_) end_examine(false, "ERR the connection to NATS was made again before the answer came");
  for (auto& [seq, culprit] : culprits_) {
    for (const auto& [id, handler] : culprit.publishing) {
      culprit.failed_for.push_back(config_.handlers.at(handler).name);
    }
    culprit.publishing.clear();
  }
  for (auto it = culprits_.begin(); it != culprits_.end();) {
    conclude(it->second);
    it = culprits_.erase(it);
  }
}

void UnreadableMessages::time_out(TimePoint now) {
  if (examined_ && now - examined_->asked >= kReadTimeout) end_examine(false, "ERR no answer from JetStream");
  if (awaiting_ && now - asked_ >= kReadTimeout) {
    awaiting_.reset();
    search_.read_failed();
  }
  for (auto it = culprits_.begin(); it != culprits_.end();) {
    Culprit& culprit = it->second;
    if (now - culprit.since < kReadTimeout) {
      ++it;
      continue;
    }
    for (const auto& [id, handler] : culprit.publishing)
      culprit.failed_for.push_back(config_.handlers.at(handler).name);
    culprit.publishing.clear();
    conclude(culprit);
    it = culprits_.erase(it);
  }
}

void UnreadableMessages::contain(const UnreadableFound& found, jetstream::StoredMessage message, TimePoint now) {
  ++found_total_;
  const std::string& stream = config_.consumer.stream;
  const std::string& durable = config_.consumer.durable;
  // What the break took with it: everything the server has out to jetfan that jetfan does not hold.
  const auto held = host_.held_sequences();
  std::size_t handed_back = 0;
  for (std::uint64_t seq = found.lost_after + 1; seq <= found.lost_to && handed_back < kMaxHandBacks; ++seq) {
    if (seq == found.stream_seq || held.count(seq) != 0) continue;
    const auto bytes = own_bytes({}, ack_subject(stream, durable, 1, seq, found.nak_consumer_seq), {}, {}, arena_);
    upstream_.nak(*bytes, Duration(0));
    ++handed_back;
  }
  const std::string escaped = escape_subject(found.subject);
  // Owed to the handlers whose patterns match its key: those with dead letters get one.
  Culprit culprit{found, std::move(message), {}, {}, {}, now};
  std::vector<std::string> dead_letters, terms;
  const auto key = jetstream::key_of(culprit.message.subject, config_.key.strip_prefix);
  if (key) {
    for (const std::size_t h : host_.matching_handlers(*key, culprit.message.headers)) {
      const auto& handler = config_.handlers.at(h);
      if (handler.dead_letter_subject.empty()) {
        terms.push_back(handler.name);
        continue;
      }
      DeadLetterFacts facts;
      facts.handler = handler.name;
      facts.reason = "unreadable subject: the NATS client cannot read a message on it (Jetfan-Subject is escaped)";
      facts.subject = escaped;
      facts.stream = stream;
      facts.stream_seq = found.stream_seq;
      facts.consumer = durable;
      facts.deliveries = 1;
      const std::uint64_t id = next_id_++;
      if (upstream_.publish(id | kIdBit, handler.dead_letter_subject,
                            dead_letter_headers(culprit.message.headers, facts), culprit.message.payload)) {
        culprit.publishing.emplace(id, h);
      } else {
        culprit.failed_for.push_back(handler.name);
      }
      dead_letters.push_back(handler.name);
    }
  }
  auto names = [](const std::vector<std::string>& list) {
    std::string out;
    for (const auto& name : list) out += (out.empty() ? "\"" : ", \"") + name + "\"";
    return out.empty() ? std::string("none") : out;
  };
  log_error("message.unreadable_subject",
            {{"seq", found.stream_seq},
             {"subject", escaped},
             {"consumer_seq", found.consumer_seq},
             {"handed_back", handed_back},
             {"dead_letters", names(dead_letters)},
             {"again", found.again}},
            "stream seq {} (subject \"{}\", escaped) has a subject the NATS client cannot read: each delivery of it "
            "broke jetfan's connection to NATS. No handler can be given it. Dead letters for: {}; matching handlers "
            "without dead letters: {}. It is terminated (+TERM on its ack subject) once its dead letters are stored, "
            "and stays in stream \"{}\" under that sequence (limits retention). Handed back {} deliveries the break "
            "took with it (-NAK), so they come again now.",
            found.stream_seq, escaped, names(dead_letters), names(terms), stream, handed_back);
  StatusSnapshot::Unreadable kept;
  kept.stream_seq = found.stream_seq;
  kept.subject = escaped;
  kept.found_unix_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  kept.handed_back = handed_back;
  kept.outcome = culprit.publishing.empty() ? "terminating" : "dead-lettering";
  for (auto it = kept_.begin(); it != kept_.end(); ++it) {
    if (it->stream_seq != found.stream_seq) continue;
    kept.times = it->times + 1;
    kept_.erase(it);
    break;
  }
  kept_.push_back(std::move(kept));
  if (kept_.size() > kKept) kept_.pop_front();
  if (culprit.publishing.empty()) {
    conclude(culprit);
    return;
  }
  culprits_[found.stream_seq] = std::move(culprit);  // an earlier one of it: its answers no longer count
}

void UnreadableMessages::on_published(std::uint64_t id, const PublishResult& result) {
  for (auto it = culprits_.begin(); it != culprits_.end(); ++it) {
    Culprit& culprit = it->second;
    const auto publishing = culprit.publishing.find(id & ~kIdBit);
    if (publishing == culprit.publishing.end()) continue;
    const std::string& name = config_.handlers.at(publishing->second).name;
    if (result.stored) {
      culprit.stored_for.push_back(name);
    } else {
      culprit.failed_for.push_back(name);
      log_warn("dead_letter.unreadable_failed",
               {{"handler", name}, {"seq", culprit.found.stream_seq}, {"reason", result.error}},
               "handler \"{}\": the dead letter of stream seq {} (unreadable subject) was not stored: {}", name,
               culprit.found.stream_seq, result.error);
    }
    culprit.publishing.erase(publishing);
    if (culprit.publishing.empty()) {
      conclude(culprit);
      culprits_.erase(it);
    }
    return;
  }
}

void UnreadableMessages::conclude(Culprit& culprit) {
  const UnreadableFound& found = culprit.found;
  std::string stored;
  for (const auto& name : culprit.stored_for) stored += (stored.empty() ? "" : ", ") + name;
  if (!culprit.failed_for.empty()) {
    std::string failed;
    for (const auto& name : culprit.failed_for) failed += (failed.empty() ? "" : ", ") + name;
    log_error("message.unreadable_kept", {{"seq", found.stream_seq}, {"failed", failed}},
              "stream seq {} (unreadable subject) is not terminated: its dead letter for {} was not stored. The "
              "server delivers it again after AckWait, and it is dead-lettered again then.",
              found.stream_seq, failed);
    record(found.stream_seq, "not terminated: dead letter not stored for " + failed + "; again at its next delivery");
    return;
  }
  host_.settle_unreadable(
      own_bytes(found.subject,
                ack_subject(config_.consumer.stream, config_.consumer.durable, 1, found.stream_seq, found.consumer_seq),
                std::move(culprit.message.headers), std::move(culprit.message.payload), arena_),
      found.stream_seq);
  record(found.stream_seq, stored.empty() ? std::string("terminated") : "dead-lettered for " + stored + "; terminated");
  if (!stored.empty()) {
    log_info("message.unreadable_dead_lettered", {{"seq", found.stream_seq}, {"handlers", stored}},
             "stream seq {} (unreadable subject) dead-lettered for {}; terminated", found.stream_seq, stored);
  }
}

void UnreadableMessages::record(std::uint64_t stream_seq, const std::string& outcome) {
  for (auto& kept : kept_) {
    if (kept.stream_seq == stream_seq) kept.outcome = outcome;
  }
}

void UnreadableMessages::fill(StatusSnapshot& snapshot) const {
  snapshot.unreadable.assign(kept_.begin(), kept_.end());
  snapshot.unreadable_total = found_total_;
}

}  // namespace jetfan
