#include "daemon.hpp"

#include <signal.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <random>

#include <spdlog/spdlog.h>

#include "jetfan/version.hpp"
#include "jetstream_admin.hpp"
#include "ledger_reader.hpp"
#include "logging.hpp"
#include "nats_auth.hpp"
#include "startup_error.hpp"
#include "stream_reader.hpp"

namespace jetfan {

Daemon::Daemon(Config config, bool log_level_pinned)
    : config_(std::move(config)),
      signals_(io_, SIGINT, SIGTERM, SIGHUP),
      reader_(io_, config_, arena_),
      time_(io_),
      notifier_(io_),
      log_level_pinned_(log_level_pinned) {}

// The control plane refers to the dispatcher, and the dispatcher to the reader: they go in that order.
Daemon::~Daemon() {
  reloader_.reset();
  control_.reset();
  dispatcher_.reset();
  listener_.reset();
  span_sink_.reset();
  exporter_.reset();
}

int Daemon::run() {
  wait_for_signal();
  for (const auto& warning : exposed_secret_file_warnings(config_.nats, config_.file)) {
    log_warn("config.secret_file_exposed", {{"file", config_.file}}, "{}", warning);
  }
  if (auto problem = check_credential_files(config_.nats)) {
    throw StartupError(kExitConfig, config_.file + ": " + *problem);
  }
  control_ = std::make_unique<ControlPlane>(io_, config_, [this] { return reload(); });
  if (!reader_.connect([this] { return stopping_; })) {
    log_info("stopped", {}, "stopped before the NATS server could be reached");
    return kExitOk;
  }
  JetStreamAdmin admin(config_, reader_);
  const ConsumerFacts facts = admin.bind_consumer();
  admin.check_dead_letter_subjects();
  ServeSettingsResult derived = derive_serve_settings(config_, facts);
  if (!derived.settings) throw StartupError(kExitConfig, "nats: " + derived.error);
  for (const auto& warning : derived.settings->warnings)
    log_warn("config.warning", {{"file", config_.file}}, "{}", warning);
  const ServeSettings& s = *derived.settings;
  for (const auto& line : admin.check_publish_subjects(s.ack_wait, s.core.max_deliver).warnings) {
    log_warn("publish.target", {{"file", config_.file}}, "{}", line);
  }
  if (config_.ledger) {
    const AdminReport bucket = admin.check_ledger_bucket();
    for (const auto& line : bucket.ok) log_info("ledger.bucket", {{"bucket", config_.ledger->bucket}}, "{}", line);
    for (const auto& line : bucket.warnings)
      log_warn("ledger.bucket", {{"bucket", config_.ledger->bucket}}, "{}", line);
  }
  log_info("nats.bound",
           {{"stream", config_.consumer.stream},
            {"consumer", config_.consumer.durable},
            {"ack_wait_ms", s.ack_wait.count()},
            {"max_deliver", facts.max_deliver},
            {"max_ack_pending", facts.max_ack_pending},
            {"filter", facts.filter},
            {"pending", facts.num_pending}},
           "nats: bound consumer \"{}\" of stream \"{}\": ack policy {}, AckWait {}ms{}, MaxDeliver {}, "
           "MaxAckPending {}, filter \"{}\", {} pending",
           config_.consumer.durable, config_.consumer.stream, to_string(s.core.ack_policy), s.ack_wait.count(),
           facts.ack_wait ? "" : " (assumed)", facts.max_deliver, facts.max_ack_pending, facts.filter,
           facts.num_pending);
  const std::size_t max_held = s.pull.max_held;
  const bool pinned = s.pin.has_value();
  const AckPolicy ack_policy = s.core.ack_policy;
  const Duration ack_wait = s.ack_wait;

  listener_ = std::make_unique<HandlerListener>(io_, config_.socket);
  reader_.subscribe();
  DispatcherHooks hooks{[this] { listener_->stop(); }, [this] { io_.stop(); },
                        [this, ack_policy, max_held, ack_wait] { take_over(ack_policy, max_held, ack_wait); }};
  dispatcher_ = std::make_unique<Dispatcher>(config_, std::move(*derived.settings), reader_, time_, notifier_, arena_,
                                             std::move(hooks));
  if (config_.tracing) start_tracing();
  if (facts.from_server) dispatcher_->bound(facts);
  // A pinned_client reader stands by first: what is outstanding is read when the pin comes to it.
  if (!pinned) {
    load_ledger(facts, ack_wait / 2);
    expect_outstanding(facts, ack_policy, max_held, ack_wait);
  }
  dispatcher_->start();
  listener_->start([this](HandlerListener::Socket socket) { dispatcher_->accept(std::move(socket)); });
  control_->attach(*dispatcher_, JetStreamReader::client_version());
  reloader_ = std::make_unique<Reloader>(config_, facts, *dispatcher_, log_level_pinned_);
  std::string handlers;
  for (const auto& handler : config_.handlers) {
    handlers += (handlers.empty() ? "" : ", ") + handler.name + " (" + std::to_string(handler.patterns.size()) +
                " pattern" + (handler.patterns.size() == 1 ? "" : "s") + ")";
  }
  log_info("serving",
           {{"stream", config_.consumer.stream},
            {"consumer", config_.consumer.durable},
            {"path", config_.socket.path},
            {"max_held", max_held}},
           "serving consumer \"{}\" of stream \"{}\" on {}; handlers: {}; holding at most {} messages",
           config_.consumer.durable, config_.consumer.stream, config_.socket.path, handlers, max_held);
  notifier_.ready(dispatcher_->status_line());
  notifier_.start_watchdog();
  if (stopping_) dispatcher_->begin_drain();  // a signal came while binding
  io_.run();
  notifier_.stop_watchdog();
  // The spans of the last messages, settled by the drain, go out within the exporter's stop timeout.
  if (exporter_) exporter_->stop();
  return dispatcher_->exit_code();
}

void Daemon::start_tracing() {
  const TracingSettings& tracing = *config_.tracing;
  SpanExporterSettings settings;
  settings.endpoint = tracing.endpoint;
  settings.max_queued = tracing.max_queued;
  settings.max_batch = tracing.max_batch;
  settings.interval = tracing.interval;
  settings.request_timeout = tracing.request_timeout;
  settings.resource.service_name = tracing.service_name;
  settings.resource.service_version = kVersion;
  std::array<char, 256> host{};
  if (gethostname(host.data(), host.size() - 1) != 0) host[0] = '\0';
  // Unique per process, as OpenTelemetry asks of service.instance.id: two jetfans may share a host.
  settings.resource.service_instance_id = std::string(host.data()) + "/" + std::to_string(getpid());
  settings.resource.attributes.push_back({"messaging.system", std::string("nats")});
  settings.resource.attributes.push_back({"jetfan.stream", config_.consumer.stream});
  settings.resource.attributes.push_back({"jetfan.durable", config_.consumer.durable});
  auto made = make_span_exporter(std::move(settings));
  if (auto* error = std::get_if<std::string>(&made)) throw StartupError(kExitConfig, "tracing: " + *error);
  exporter_ = std::move(std::get<std::unique_ptr<SpanExporter>>(made));
  span_sink_ = std::make_unique<SpanExporterSink>(*exporter_);
  const std::uint64_t seed = (std::uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
  dispatcher_->enable_tracing(*span_sink_, exporter_.get(), seed);
  log_info("tracing.on", {{"endpoint", tracing.endpoint}, {"sample_ratio", fmt::format("{}", tracing.sample_ratio)}},
           "tracing: spans of each message and handler delivery go to {} (OTLP/HTTP JSON); messages without a "
           "traceparent traced at a ratio of {}",
           tracing.endpoint, tracing.sample_ratio);
}

void Daemon::expect_outstanding(const ConsumerFacts& facts, AckPolicy ack_policy, std::size_t max_held,
                                Duration ack_wait) {
  bool ordered = false;
  for (const auto& handler : config_.handlers) ordered = ordered || handler.order_by.kind != OrderBy::Kind::kNone;
  // Without the consumer's info nothing says what is outstanding; with AckPolicy none nothing is.
  if (!facts.from_server || ack_policy == AckPolicy::kNone || facts.ack_pending == 0 ||
      facts.delivered <= facts.ack_floor) {
    return;
  }
  if (!ordered) {
    // Under AckPolicy all the ack floor waits for them all the same; nothing need be read for that.
    if (ack_policy == AckPolicy::kAll) dispatcher_->expect_outstanding(facts, std::vector<jetstream::StoredMessage>{});
    return;
  }
  const auto began = std::chrono::steady_clock::now();
  // Reading pays only while it costs less than what it saves: beyond half an AckWait, every ordered
  // handler waiting about one AckWait for the old messages is the cheaper way.
  const auto read =
      StreamReader(config_, reader_).read(facts.ack_floor, facts.delivered, facts.filter, max_held, ack_wait / 2);
  if (read) {
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - began);
    log_info("order.restart_read", {{"messages", read->size()}, {"ms", took.count()}},
             "order: read {} message(s) of stream seqs {} to {} from the stream in {}ms", read->size(),
             facts.ack_floor + 1, facts.delivered, took.count());
  }
  dispatcher_->expect_outstanding(facts, read);
}

void Daemon::take_over(AckPolicy ack_policy, std::size_t max_held, Duration ack_wait) {
  if (auto facts = JetStreamAdmin(config_, reader_).read_facts()) {
    load_ledger(*facts, ack_wait / 2);
    expect_outstanding(*facts, ack_policy, max_held, ack_wait);
  } else {
    // Without the ack floor every record is kept: what they name still goes only to the others.
    load_ledger(ConsumerFacts{}, ack_wait / 2);
    // Nothing says what the former owner left: every ordered delivery waits for it (R26-R31).
    ConsumerFacts unknown;
    unknown.ack_pending = 1;
    unknown.delivered = 1;
    dispatcher_->expect_outstanding(unknown, std::nullopt);
  }
}

void Daemon::load_ledger(const ConsumerFacts& facts, Duration budget) {
  if (!config_.ledger) return;
  // Without the consumer's info the floor is unknown: every record is kept (one below the floor is
  // of a message that will not come again, and costs only memory until the ledger is full).
  const std::uint64_t floor = facts.from_server ? facts.ack_floor : 0;
  if (auto records = LedgerReader(config_, reader_).read(config_.ledger->max_records, budget)) {
    dispatcher_->load_ledger(*records, floor);
  }
}

void Daemon::wait_for_signal() {
  signals_.async_wait([this](const boost::system::error_code& error, int signal) {
    if (!error) on_signal(signal);
  });
}

void Daemon::on_signal(int signal) {
  wait_for_signal();
  if (signal == SIGHUP) {
    log_info("reload.signal", {{"signal", "SIGHUP"}, {"file", config_.file}}, "SIGHUP: reloading {}", config_.file);
    reload();
    return;
  }
  const char* name = signal == SIGTERM ? "SIGTERM" : "SIGINT";
  if (!dispatcher_) {
    stopping_ = true;
  } else if (dispatcher_->serving()) {
    log_info("drain.started", {{"signal", name}}, "{}: draining", name);
    dispatcher_->begin_drain();
  } else if (dispatcher_->draining()) {
    log_warn("drain.cut_short", {{"signal", name}}, "{} again: stopping now", name);
    dispatcher_->finish();
  }
}

ReloadResult Daemon::reload() {
  if (!reloader_) {
    log_warn("reload.refused", {{"reason", "not serving yet"}},
             "reload: refused: jetfan is not serving yet (still connecting to NATS); reload once it serves");
    return ReloadResult{false,
                        {"refused: jetfan is not serving yet (still connecting to NATS); reload once it serves"}};
  }
  ReloadResult result = reloader_->reload();
  control_->note_reload(result.applied);
  return result;
}

}  // namespace jetfan
