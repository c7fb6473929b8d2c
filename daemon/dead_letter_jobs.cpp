// The why of a job's steps is in dead_letter_jobs.hpp; here, what each answer means for the next.

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>

#include <nlohmann/json.hpp>

#include "dead_letter_jobs.hpp"
#include "logging.hpp"
#include "nats_header.hpp"
#include "redriven_message.hpp"
#include "stream_names.hpp"
#include "unreadable_subject.hpp"

namespace jetfan {
namespace {

// JetStream answers in milliseconds; a request unanswered this long ends the job (nothing it did
// before is undone, and nothing unconfirmed was deleted).
constexpr Duration kApiTimeout{5000};

std::uint64_t number(std::optional<std::string_view> text) {
  std::uint64_t value = 0;
  if (text) std::from_chars(text->data(), text->data() + text->size(), value);
  return value;
}

std::string header_or(const jetstream::StoredMessage& letter, std::string_view name, std::string_view otherwise) {
  const auto value = proto::find_header(letter.headers, name);
  return std::string(value ? *value : otherwise);
}

}  // namespace

std::optional<std::string> DeadLetterJobs::start(const DeadLetterJob& job, DeadLetterJobOutput out) {
  if (!host_.serving()) return "jetfan is not serving (it is stopping)";
  const auto found = std::find_if(config_.handlers.begin(), config_.handlers.end(),
                                  [&](const HandlerSettings& h) { return h.name == job.handler; });
  if (found == config_.handlers.end()) return "no handler \"" + job.handler.substr(0, 64) + "\" is declared";
  if (found->dead_letter_subject.empty()) {
    return "handler \"" + job.handler + "\" has no dead_letter subject: it has no dead letters";
  }
  if (job.kind == DeadLetterJob::Kind::kRedrive && !job.dry_run) {
    // Its dead letters would wait for an instance, and the redrive with them.
    if (host_.instances(static_cast<std::size_t>(found - config_.handlers.begin())) == 0) {
      return "handler \"" + job.handler + "\" has no connected instance to redrive to";
    }
    for (const auto& [id, run] : runs_) {
      if (run.job.kind == DeadLetterJob::Kind::kRedrive && !run.job.dry_run && run.job.handler == job.handler) {
        return "a redrive of handler \"" + job.handler + "\" is under way already";
      }
    }
  }
  const std::uint64_t id = next_run_++;
  Run& run = runs_[id];
  run.job = job;
  run.out = std::move(out);
  run.subject = found->dead_letter_subject;
  run.next = job.from;
  if (job.kind == DeadLetterJob::Kind::kRedrive && !job.dry_run) ++counts_[job.handler].running;
  log_info("redrive.begins",
           {{"handler", job.handler},
            {"kind", job.kind == DeadLetterJob::Kind::kList ? "list"
                     : job.dry_run                          ? "dry_run"
                                                            : "redrive"},
            {"subject", run.subject}},
           "handler \"{}\": {} of its dead letters on \"{}\" begins", job.handler,
           job.kind == DeadLetterJob::Kind::kList ? "a listing"
           : job.dry_run                          ? "a dry run of a redrive"
                                                  : "a redrive",
           run.subject);
  ask(id, run, std::string(jetstream::kStreamNamesSubject), jetstream::stream_names_request(run.subject));
  return std::nullopt;
}

const HandlerSettings* DeadLetterJobs::find_handler(const std::string& name) const {
  for (const auto& handler : config_.handlers) {
    if (handler.name == name) return &handler;
  }
  return nullptr;
}

void DeadLetterJobs::ask(std::uint64_t id, Run& run, const std::string& subject, const std::string& body) {
  run.awaiting = next_api_++;
  run.asked = host_.now();
  if (!host_.api_request(run.awaiting, subject, body)) {
    end_run(id, false, "the request to " + subject + " could not be sent (not connected to the server)");
  }
}

void DeadLetterJobs::on_api_reply(std::uint64_t api, const ApiReply& reply) {
  const auto found =
      std::find_if(runs_.begin(), runs_.end(), [api](const auto& entry) { return entry.second.awaiting == api; });
  if (found == runs_.end()) return;  // timed out already
  const std::uint64_t id = found->first;
  Run& run = found->second;
  run.awaiting = 0;
  if (reply.json.empty()) {
    end_run(id, false, "the server did not answer: " + std::string(reply.error));
    return;
  }
  switch (run.step) {
    case Run::Step::kNames: {
      auto named = jetstream::parse_stream_names(reply.json);
      if (auto* error = std::get_if<jetstream::ApiError>(&named)) {
        end_run(id, false, "which stream stores \"" + run.subject + "\"? " + error->describe());
        return;
      }
      const auto& streams = std::get<jetstream::StreamNames>(named).streams;
      if (streams.empty()) {
        end_run(id, false, "which stream stores \"" + run.subject + "\"? no stream captures the subject");
        return;
      }
      run.stream = streams.front();
      if (run.job.all && run.job.kind == DeadLetterJob::Kind::kRedrive) {
        // Its own failures are dead-lettered anew behind it: --all ends where the stream ends now.
        run.step = Run::Step::kLast;
        ask(id, run, jetstream::msg_get_subject(run.stream), jetstream::msg_get_last_request(run.subject));
        return;
      }
      read_next(id, run);
      return;
    }
    case Run::Step::kLast: {
      auto got = jetstream::parse_msg_get(reply.json);
      if (auto* error = std::get_if<jetstream::ApiError>(&got)) {
        end_run(id, false, "reading the last dead letter: " + error->describe());
        return;
      }
      if (std::holds_alternative<jetstream::NoMessage>(got)) {
        end_run(id, true, "");
        return;
      }
      run.job.to = std::min(run.job.to, std::get<jetstream::StoredMessage>(got).seq);
      read_next(id, run);
      return;
    }
    case Run::Step::kGet: {
      auto got = jetstream::parse_msg_get(reply.json);
      if (auto* error = std::get_if<jetstream::ApiError>(&got)) {
        end_run(id, false,
                "reading the dead letter at or after seq " + std::to_string(run.next) + ": " + error->describe());
        return;
      }
      if (std::holds_alternative<jetstream::NoMessage>(got)) {
        end_run(id, true, "");
        return;
      }
      on_letter(id, run, std::move(std::get<jetstream::StoredMessage>(got)));
      return;
    }
    case Run::Step::kDelete:
      on_deleted(id, run, reply.json);
      return;
    case Run::Step::kRedriving:
    case Run::Step::kDone:
      return;
  }
}

void DeadLetterJobs::on_deleted(std::uint64_t id, Run& run, std::string_view json) {
  const auto why = jetstream::parse_msg_delete(json);
  const std::uint64_t seq = run.current.seq;
  RedriveCounts& counts = counts_[run.job.handler];
  std::string line = "seq " + std::to_string(seq) + ": ";
  if (why) {
    ++run.kept;
    ++counts.kept;
    line += "settled by the handler, but not deleted (" + why->describe() + "): a later redrive delivers it again";
  } else if (run.again) {
    ++run.redead;
    ++counts.again;
    line += "failed again: dead-lettered anew (a later seq), this one deleted";
  } else {
    ++run.confirmed;
    ++counts.confirmed;
    line += "confirmed by the handler, deleted";
  }
  log_info("redrive.progress", {{"handler", run.job.handler}, {"dead_letter", seq}, {"stream", run.stream}},
           "handler \"{}\": redrive of dead letter {} (stream \"{}\"): {}", run.job.handler, seq, run.stream,
           line.substr(line.find(": ") + 2));
  if (!run.out.line(line)) run.stop = true;
  read_next(id, run);
}

void DeadLetterJobs::read_next(std::uint64_t id, Run& run) {
  if (run.stop) {
    end_run(id, false, "nobody reads the output any more: stopped");
    return;
  }
  if (!host_.serving()) {
    end_run(id, false, "jetfan is stopping");
    return;
  }
  if (run.next > run.job.to || run.next == 0) {
    end_run(id, true, "");
    return;
  }
  run.step = Run::Step::kGet;
  ask(id, run, jetstream::msg_get_subject(run.stream), jetstream::msg_get_next_request(run.next, run.subject));
}

void DeadLetterJobs::on_letter(std::uint64_t id, Run& run, jetstream::StoredMessage letter) {
  if (letter.seq > run.job.to) {
    end_run(id, true, "");
    return;
  }
  run.next = letter.seq + 1;
  // Handlers may share a dead-letter subject: each sees its own.
  if (header_or(letter, "Jetfan-Handler", "") != run.job.handler) {
    read_next(id, run);
    return;
  }
  ++run.seen;
  // Whoever may publish on the subject can forge a letter: its fields are checked before anything
  // of it goes to a handler, and shown escaped.
  const auto* handler = find_handler(run.job.handler);
  const auto refused = handler ? why_not_redrivable(letter, handler->patterns, config_.key.strip_prefix) : std::nullopt;
  if (refused) ++run.refused;
  const std::string key = escape_subject(redriven_subject(letter));
  const std::string reason = escape_subject(header_or(letter, "Jetfan-Reason", "?"));
  const std::uint64_t attempts = number(proto::find_header(letter.headers, "Jetfan-Attempts"));
  if (run.job.kind == DeadLetterJob::Kind::kList) {
    if (run.job.json) {
      run.json_items.push_back(
          nlohmann::json{{"seq", letter.seq},
                         {"subject", key},
                         {"reason", reason},
                         {"attempts", attempts},
                         {"time", letter.time},
                         {"original_seq", number(proto::find_header(letter.headers, "Jetfan-Sequence"))},
                         {"bytes", letter.payload.size()},
                         {"redrivable", !refused},
                         {"not_redrivable", refused ? nlohmann::json(*refused) : nlohmann::json(nullptr)}}
              .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    } else if (!run.out.line(fmt::format("seq {}  subject {}  attempts {}  time {}  reason {}{}", letter.seq, key,
                                         attempts, letter.time, reason,
                                         refused ? "  NOT REDRIVABLE: " + *refused : std::string()))) {
      run.stop = true;
    }
    read_next(id, run);
    return;
  }
  if (refused) {
    // Left in the stream, for the operator to look at and delete.
    if (!run.job.dry_run) {
      ++counts_[run.job.handler].refused;
      log_warn(
          "redrive.refused",
          {{"handler", run.job.handler}, {"dead_letter", letter.seq}, {"stream", run.stream}, {"reason", *refused}},
          "handler \"{}\": dead letter {} (stream \"{}\") is not redriven: {}. It stays in the stream; anyone "
          "who may publish on \"{}\" can forge a dead letter, so look at it before deleting it",
          run.job.handler, letter.seq, run.stream, *refused, run.subject);
    }
    if (!run.out.line(fmt::format("seq {}: {}not redriven: {}; it stays in the stream", letter.seq,
                                  run.job.dry_run ? "would be " : "", *refused))) {
      run.stop = true;
    }
    read_next(id, run);
    return;
  }
  if (run.job.dry_run) {
    if (!run.out.line(fmt::format("seq {}: would be redriven (subject {}, {} bytes; {})", letter.seq, key,
                                  letter.payload.size(), reason))) {
      run.stop = true;
    }
    read_next(id, run);
    return;
  }
  run.current = std::move(letter);
  begin_redrive(id, run);
}

void DeadLetterJobs::begin_redrive(std::uint64_t id, Run& run) {
  const jetstream::StoredMessage& letter = run.current;
  const HandlerSettings* handler = find_handler(run.job.handler);
  if (handler == nullptr) {
    end_run(id, false, "handler \"" + run.job.handler + "\" was removed by a reload");
    return;
  }
  if (!host_.redrive(static_cast<std::size_t>(handler - config_.handlers.data()), letter)) {
    end_run(id, false, "seq " + std::to_string(letter.seq) + " could not be redriven now (jetfan is stopping)");
    return;
  }
  run.step = Run::Step::kRedriving;
  run.again = false;
  if (!run.out.line(fmt::format("seq {}: redriving to handler \"{}\" (subject {})", letter.seq, run.job.handler,
                                redriven_subject(letter)))) {
    run.stop = true;
  }
}

void DeadLetterJobs::redrive_ended(const Effect& effect) {
  const std::string& name = effect.handler < config_.handlers.size() ? config_.handlers[effect.handler].name : "";
  const auto found = std::find_if(runs_.begin(), runs_.end(), [&](const auto& entry) {
    return entry.second.step == Run::Step::kRedriving && entry.second.current.seq == effect.redrive &&
           (effect.kind == Effect::Kind::kRedriveDropped || entry.second.job.handler == name);
  });
  if (found == runs_.end()) return;
  const std::uint64_t id = found->first;
  Run& run = found->second;
  if (effect.kind == Effect::Kind::kRedriveDropped) {
    ++run.kept;
    ++counts_[run.job.handler].kept;
    run.out.line("seq " + std::to_string(effect.redrive) + ": not settled by the handler; the dead letter stays");
    end_run(id, false,
            host_.serving() ? "the handler was removed, or lost its dead_letter, by a reload" : "jetfan is stopping");
    return;
  }
  run.again = effect.again;
  run.step = Run::Step::kDelete;
  ask(id, run, jetstream::msg_delete_subject(run.stream), jetstream::msg_delete_request(effect.redrive));
}

void DeadLetterJobs::end_run(std::uint64_t id, bool ok, const std::string& why) {
  auto found = runs_.find(id);
  if (found == runs_.end()) return;
  Run run = std::move(found->second);
  runs_.erase(found);
  const DeadLetterJob& job = run.job;
  const bool redriving = job.kind == DeadLetterJob::Kind::kRedrive && !job.dry_run;
  if (redriving) --counts_[job.handler].running;
  std::string line;
  if (job.kind == DeadLetterJob::Kind::kList && job.json) {
    line = "{\"schema\":\"jetfan.dlq/1\",\"handler\":" + nlohmann::json(job.handler).dump() +
           ",\"subject\":" + nlohmann::json(run.subject).dump() + ",\"stream\":" + nlohmann::json(run.stream).dump() +
           ",\"complete\":" + (ok ? "true" : "false") + ",\"error\":" + (ok ? "null" : nlohmann::json(why).dump()) +
           ",\"dead_letters\":[";
    for (std::size_t i = 0; i < run.json_items.size(); ++i) line += (i == 0 ? "" : ",") + run.json_items[i];
    line += "]}";
  } else if (job.kind == DeadLetterJob::Kind::kList || job.dry_run) {
    line = fmt::format("{} {} dead letter(s) of handler \"{}\" in stream \"{}\"{}{}{}", ok ? "OK" : "FAILED", run.seen,
                       job.handler, run.stream, job.dry_run ? " would be redriven" : "",
                       run.refused > 0 ? fmt::format(" ({} not redrivable)", run.refused) : std::string(),
                       ok ? std::string() : ": " + why);
  } else {
    ok = ok && run.redead == 0 && run.kept == 0 && run.refused == 0;
    line = fmt::format(
        "{} redrive of handler \"{}\": {} dead letter(s), {} confirmed and deleted, {} failed again "
        "(dead-lettered anew), {} kept, {} not redrivable (left in the stream){}",
        ok ? "OK" : "FAILED", job.handler, run.seen, run.confirmed, run.redead, run.kept, run.refused,
        why.empty() ? std::string() : ": " + why);
    log_info("redrive.ended", {{"handler", job.handler}, {"ok", ok}}, "handler \"{}\": {}", job.handler, line);
  }
  if (!why.empty() && job.kind == DeadLetterJob::Kind::kList) {
    log_warn("redrive.list_failed", {{"handler", job.handler}, {"reason", why}},
             "handler \"{}\": listing its dead letters failed: {}", job.handler, why);
  }
  run.out.done(ok, line);
}

void DeadLetterJobs::time_out(TimePoint now) {
  std::vector<std::uint64_t> late;
  for (const auto& [id, run] : runs_) {
    if (run.awaiting != 0 && run.asked + kApiTimeout <= now) late.push_back(id);
  }
  for (const std::uint64_t id : late) end_run(id, false, "JetStream did not answer in time");
}

void DeadLetterJobs::end_all(const std::string& why) {
  std::vector<std::uint64_t> ids;
  for (const auto& [id, run] : runs_) ids.push_back(id);
  for (const std::uint64_t id : ids) end_run(id, false, why);
}

}  // namespace jetfan
