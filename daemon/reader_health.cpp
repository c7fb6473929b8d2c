#include "reader_health.hpp"

#include "logging.hpp"
#include "startup_error.hpp"

namespace jetfan {

namespace {

// How long the connection may be lost before jetfan says it is not consuming: a server restart or
// a failover reconnects within a few seconds (nats.reconnect_wait), and is not worth a page.
constexpr Duration kDisconnectedGrace{10000};
// Another reader's verdict clears once nothing was seen of it for this long.
constexpr Duration kOtherReaderQuiet{30000};

}  // namespace

ReaderHealth::ReaderHealth(const Config& config, Duration poll, bool pinned)
    : config_(config),
      health_(kDisconnectedGrace),
      others_(config.consumer.pull_expires, poll, kOtherReaderQuiet),
      pinned_(pinned) {}

void ReaderHealth::disconnected(TimePoint now, std::string_view why) {
  health_.disconnected(now, std::string(why));
  others_.excuse();
}

void ReaderHealth::reconnected() {
  health_.reconnected();
  others_.excuse();
}

std::string ReaderHealth::describe(const OtherReaderVerdict& verdict) const {
  std::string what;
  if (verdict.deliveries_elsewhere > 0) {
    what = std::to_string(verdict.deliveries_elsewhere) + " of its deliveries went to another client";
  }
  if (verdict.waiting_elsewhere > 0) {
    what += (what.empty() ? "" : ", and ") + std::to_string(verdict.waiting_elsewhere) +
            " pull request(s) not jetfan's wait at it";
  }
  return "another client reads consumer \"" + config_.consumer.durable + "\" of stream \"" + config_.consumer.stream +
         "\": " + what +
         ". Two readers split the stream between them, and each handler misses what the other took: stop the "
         "other reader (another jetfan with a copy of this config?), or give it a durable of its own";
}

void ReaderHealth::heard(TimePoint now, const jetstream::ConsumerInfo& info, const OtherReaderCheck::Own& own) {
  if (missing_) {
    log_info("nats.consumer_back", {{"consumer", config_.consumer.durable}},
             "nats: consumer \"{}\" of stream \"{}\" answers again", config_.consumer.durable, config_.consumer.stream);
    missing_.reset();
    health_.consumer_missing(std::nullopt);
  }
  if (pinned_) return;
  const bool seen_before = others_.verdict().seen;
  const OtherReaderVerdict& verdict = others_.observe(now, {info.delivered.consumer_seq, info.num_waiting}, own);
  if (verdict.seen) {
    const std::string what = describe(verdict);
    health_.other_reader(what);
    if (!seen_before) {
      log_error("nats.other_reader",
                {{"consumer", config_.consumer.durable},
                 {"stream", config_.consumer.stream},
                 {"deliveries_elsewhere", verdict.deliveries_elsewhere},
                 {"waiting_elsewhere", verdict.waiting_elsewhere}},
                "{}", what);
      if (config_.consumer.on_other_reader == OtherReaderAction::kExit && !exit_code_) {
        log_error("nats.other_reader_exit", {{"consumer", config_.consumer.durable}},
                  "consumer.on_other_reader is exit: stopping (exit status {})", kExitConfig);
        exit_code_ = kExitConfig;
      }
    }
  } else if (seen_before) {
    health_.other_reader(std::nullopt);
    log_info("nats.other_reader_gone", {{"consumer", config_.consumer.durable}},
             "nats: no other reader of consumer \"{}\" seen for {}s", config_.consumer.durable,
             kOtherReaderQuiet.count() / 1000);
  }
}

void ReaderHealth::heard(const jetstream::ApiError& error) {
  if (error.err_code != jetstream::kConsumerNotFound && error.err_code != jetstream::kStreamNotFound) return;
  const std::string why = "the server says: " + error.describe();
  if (missing_ == why) return;
  missing_ = why;
  health_.consumer_missing(why);
  log_error("nats.consumer_gone", {{"consumer", config_.consumer.durable}, {"reason", error.describe()}},
            "nats: consumer \"{}\" of stream \"{}\" cannot be read any more ({}): nothing is consumed until the "
            "controller makes it again; jetfan never creates one",
            config_.consumer.durable, config_.consumer.stream, error.describe());
}

void ReaderHealth::fill(StatusSnapshot& s, TimePoint now) const {
  s.nats_connected = health_.connected();
  if (const auto lost = health_.disconnected_for(now)) {
    s.nats_disconnected_seconds = std::chrono::duration<double>(*lost).count();
  }
  s.nats_last_disconnect = health_.last_disconnect();
  const auto& verdict = others_.verdict();
  s.other_reader = verdict.seen;
  s.not_consuming = health_.reasons(now);
  if (!s.not_consuming.empty()) s.ready = false;
}

}  // namespace jetfan
