#include "jetstream_admin.hpp"

#include <algorithm>

#include "consumer_binding.hpp"
#include "consumer_info.hpp"
#include "duplicate_window.hpp"
#include "effective_config.hpp"
#include "ledger_record.hpp"
#include "logging.hpp"
#include "nats_handles.hpp"
#include "server_info.hpp"
#include "startup_error.hpp"
#include "stream_info.hpp"
#include "stream_names.hpp"

namespace jetfan {

namespace {

// How long a startup request waits for its answer (cnats's JetStream context waits as long).
constexpr std::int64_t kAnswerMs = 5000;

std::string_view body_of(natsMsg* message) {
  return {natsMsg_GetData(message), static_cast<std::size_t>(natsMsg_GetDataLength(message))};
}

}  // namespace

BindingVerdict JetStreamAdmin::ask_consumer_info() {
  const std::string subject = jetstream::consumer_info_subject(config_.consumer.stream, config_.consumer.durable);
  natsMsg* raw_reply = nullptr;
  natsStatus status = NATS_OK;
  std::string why;  // cnats's error text is per thread: taken where the call ran
  nats_.wait_off_thread(
      [&] {
        status = natsConnection_Request(&raw_reply, nats_.connection(), subject.c_str(), "", 0, kAnswerMs);
        if (status != NATS_OK) why = nats_last_error(status);
      },
      Duration(kAnswerMs));
  NatsMsgPtr reply(raw_reply);
  ConsumerInfoAnswer answer = NoAnswer{status == NATS_NO_RESPONDERS, why};
  if (status == NATS_OK && reply) {
    auto parsed = jetstream::parse_consumer_info(body_of(reply.get()));
    if (auto* info = std::get_if<jetstream::ConsumerInfo>(&parsed)) {
      answer = std::move(*info);
    } else {
      answer = std::get<jetstream::ApiError>(std::move(parsed));
    }
  }
  return judge_binding(config_, answer);
}

std::optional<ConsumerFacts> JetStreamAdmin::read_facts() {
  BindingVerdict verdict = ask_consumer_info();
  if (verdict.kind == BindingVerdict::Kind::kBound && verdict.facts.from_server) return std::move(verdict.facts);
  log_warn("nats.consumer_info_failed", {{"consumer", config_.consumer.durable}}, "{}", verdict.message);
  return std::nullopt;
}

ConsumerFacts JetStreamAdmin::bind_consumer() {
  BindingVerdict verdict = ask_consumer_info();
  if (!verdict.facts.priority_groups.empty()) {
    // Whether its pins can be trusted depends on the server's version (config/priority_group.hpp).
    char url[512] = {0};
    natsConnection_GetConnectedUrl(nats_.connection(), url, sizeof url);
    verdict.facts.server_version = read_server_version(url, Duration(kAnswerMs));
  }
  // Ifs, not a switch: clang 14 at -O0 ran the destructors of the log line's fields (an
  // initializer_list's array, in the kUnread case) when a throw in a later case unwound, fields that
  // were never built (UBSan: "unreachable program point" in ~variant, on every fatal bind).
  if (verdict.kind == BindingVerdict::Kind::kRefused) throw StartupError(kExitConfig, verdict.message);
  if (verdict.kind == BindingVerdict::Kind::kNotAvailable) throw StartupError(kExitTempFail, verdict.message);
  if (verdict.kind == BindingVerdict::Kind::kUnread) {
    log_warn("nats.consumer_info_failed", {{"consumer", config_.consumer.durable}}, "{}", verdict.message);
  }
  return std::move(verdict.facts);
}

std::variant<std::string, std::string> JetStreamAdmin::request(const std::string& subject, const std::string& body) {
  natsMsg* raw_reply = nullptr;
  natsStatus status = NATS_OK;
  std::string why;  // cnats's error text is per thread: taken where the call ran
  nats_.wait_off_thread(
      [&] {
        status = natsConnection_Request(&raw_reply, nats_.connection(), subject.c_str(), body.data(),
                                        static_cast<int>(body.size()), config_.nats.connect_timeout.count());
        if (status != NATS_OK) why = nats_last_error(status);
      },
      Duration(0));
  NatsMsgPtr reply(raw_reply);
  if (status != NATS_OK) return std::variant<std::string, std::string>(std::in_place_index<1>, why);
  return std::variant<std::string, std::string>(std::in_place_index<0>, body_of(reply.get()));
}

std::variant<std::vector<std::string>, std::string> JetStreamAdmin::streams_capturing(const std::string& subject) {
  using Result = std::variant<std::vector<std::string>, std::string>;
  const auto answer = request(std::string(jetstream::kStreamNamesSubject), jetstream::stream_names_request(subject));
  if (answer.index() == 1) return Result(std::in_place_index<1>, std::get<1>(answer));
  const std::string& body = std::get<0>(answer);
  auto names = jetstream::parse_stream_names(body);
  if (std::holds_alternative<jetstream::ApiError>(names)) {
    return Result(std::in_place_index<1>, "the server did not say: " + body.substr(0, 200));
  }
  return Result(std::in_place_index<0>, std::move(std::get<jetstream::StreamNames>(names).streams));
}

std::variant<Duration, std::string> JetStreamAdmin::duplicate_window_of(const std::string& stream) {
  using Result = std::variant<Duration, std::string>;
  const auto answer = request(jetstream::stream_info_subject(stream), "");
  if (answer.index() == 1) return Result(std::in_place_index<1>, std::get<1>(answer));
  const auto info = jetstream::parse_stream_info(std::get<0>(answer));
  if (const auto* error = std::get_if<jetstream::ApiError>(&info)) return Result(error->describe());
  return Result(std::chrono::duration_cast<Duration>(std::get<jetstream::StreamInfo>(info).duplicate_window));
}

void JetStreamAdmin::check_dead_letter_subjects() {
  for (const auto& handler : config_.handlers) {
    const std::string& subject = handler.dead_letter_subject;
    if (subject.empty()) continue;
    const std::string where = config_.file + ": handlers." + handler.name + ".dead_letter.subject";
    const auto capturing = streams_capturing(subject);
    if (const auto* why = std::get_if<std::string>(&capturing)) {
      log_warn("dead_letter.stream_unknown", {{"handler", handler.name}, {"subject", subject}, {"reason", *why}},
               "{}: cannot tell which stream captures \"{}\" ({}); dead letters that no stream takes are held and "
               "tried again",
               where, subject, *why);
      continue;
    }
    const std::vector<std::string>& streams = std::get<std::vector<std::string>>(capturing);
    if (streams.empty()) {
      throw StartupError(kExitConfig, where + ": no stream captures \"" + subject +
                                          "\", so the dead letters of handler " + handler.name +
                                          " could not be stored. jetfan never creates streams: have the controller "
                                          "make one whose subjects take it, or change the subject.");
    }
    if (std::find(streams.begin(), streams.end(), config_.consumer.stream) != streams.end()) {
      log_warn("dead_letter.own_stream",
               {{"handler", handler.name}, {"subject", subject}, {"stream", config_.consumer.stream}},
               "{}: \"{}\" is captured by stream \"{}\", the one jetfan reads: its dead letters would come back "
               "to it",
               where, subject, config_.consumer.stream);
    }
    log_info("dead_letter.stream", {{"handler", handler.name}, {"subject", subject}, {"stream", streams.front()}},
             "handler \"{}\": dead letters go to \"{}\", stored by stream \"{}\"", handler.name, subject,
             streams.front());
  }
}

AdminReport JetStreamAdmin::check_publish_subjects(Duration ack_wait, std::int64_t max_deliver) {
  AdminReport report;
  for (const auto& handler : config_.handlers) {
    if (!handler.publish) continue;
    const std::string where = config_.file + ": handlers." + handler.name + ".publish.subjects";
    std::vector<std::string> checked;  // streams whose window was judged for this handler
    for (const std::string& pattern : handler.publish->subjects) {
      const auto capturing = streams_capturing(pattern);
      if (const auto* why = std::get_if<std::string>(&capturing)) {
        report.warnings.push_back(where + ": cannot tell which stream captures \"" + pattern + "\" (" + *why + ")");
        continue;
      }
      const auto& streams = std::get<std::vector<std::string>>(capturing);
      if (streams.empty()) {
        report.warnings.push_back(where + ": no stream captures \"" + pattern + "\": handler \"" + handler.name +
                                  "\"'s publishes there will be answered PUBERR no-stream until one does");
        continue;
      }
      for (const std::string& stream : streams) {
        if (std::find(checked.begin(), checked.end(), stream) != checked.end()) continue;
        checked.push_back(stream);
        const auto window = duplicate_window_of(stream);
        if (const auto* why = std::get_if<std::string>(&window)) {
          report.warnings.push_back(where + ": cannot read the duplicate window of stream \"" + stream + "\" (" + *why +
                                    ")");
          continue;
        }
        const DuplicateWindowFacts facts{
            handler.name, stream,      std::get<Duration>(window),
            ack_wait,     max_deliver, handler.retry ? handler.retry->max_attempts : std::uint32_t{0}};
        if (auto problem = duplicate_window_problem(facts)) {
          report.warnings.push_back(where + ": " + *problem);
        } else {
          report.ok.push_back("handler \"" + handler.name + "\" publishes to stream \"" + stream +
                              "\", whose duplicate_window " + format_duration(facts.duplicate_window) +
                              " outlasts its redeliveries (" + format_duration(*redelivery_span(facts)) + ")");
        }
      }
    }
  }
  return report;
}

}  // namespace jetfan

namespace jetfan {

AdminReport JetStreamAdmin::check_ledger_bucket() {
  const std::string& bucket = config_.ledger->bucket;
  const std::string stream = jetstream::ledger_stream(bucket);
  const std::string where = config_.file + ": ledger.bucket";
  AdminReport report;
  const auto answer = request(jetstream::stream_info_subject(stream), "");
  if (answer.index() == 1) {
    report.warnings.push_back(where + ": cannot read bucket \"" + bucket + "\" (" + std::get<1>(answer) +
                              "); jetfan goes on, and writes its records when it can");
    return report;
  }
  const auto info = jetstream::parse_stream_info(std::get<0>(answer));
  if (const auto* error = std::get_if<jetstream::ApiError>(&info)) {
    if (error->err_code == jetstream::kStreamNotFound) {
      throw StartupError(kExitConfig, where + ": no key-value bucket \"" + bucket + "\" (stream " + stream +
                                          "). jetfan never creates it: have the controller make it, or run `nats kv "
                                          "add " +
                                          bucket +
                                          " --history 1 --ttl 1h --replicas 3` (docs/OPERATING.md, "
                                          "\"Ledger\")");
    }
    report.warnings.push_back(where + ": cannot read bucket \"" + bucket + "\" (" + error->describe() +
                              "); jetfan goes on, and writes its records when it can");
    return report;
  }
  const jetstream::StreamInfo& settings = std::get<jetstream::StreamInfo>(info);
  if (settings.max_msgs_per_subject != 1) {
    report.warnings.push_back(where + ": bucket \"" + bucket + "\" keeps a history of " +
                              (settings.max_msgs_per_subject < 1 ? std::string("every value")
                                                                 : std::to_string(settings.max_msgs_per_subject)) +
                              " per key: jetfan reads only the last; --history 1 keeps it small");
  }
  if (settings.max_age.count() == 0) {
    report.warnings.push_back(where + ": bucket \"" + bucket +
                              "\" has no TTL: the record of a message the server stops redelivering (MaxDeliver) "
                              "stays until deleted; --ttl 1h lets it go");
  }
  const auto ttl = std::chrono::duration_cast<std::chrono::seconds>(settings.max_age).count();
  report.ok.push_back("ledger: bucket \"" + bucket + "\" (stream " + stream + "), " +
                      std::to_string(settings.num_replicas) + " replica(s), TTL " +
                      (ttl == 0 ? std::string("none") : std::to_string(ttl) + " s"));
  return report;
}

}  // namespace jetfan
