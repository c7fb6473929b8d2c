#include "control_plane.hpp"

#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>
#include <charconv>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <variant>

#include "dead_letter_command.hpp"
#include "dispatcher.hpp"
#include "jetfan/version.hpp"
#include "logging.hpp"
#include "prometheus_text.hpp"
#include "status_render.hpp"

namespace jetfan {
namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

namespace {

constexpr Duration kRateSample{1000};    // how often per-handler counts are sampled for rates
constexpr Duration kRateSpan{60000};     // rates are over the last minute
constexpr Duration kServerAnswer{2000};  // how long `status` waits for the server's consumer info
constexpr std::size_t kMaxTails = 16;    // tails at once; each may hold 512 KiB of output
constexpr std::size_t kUnroutableSubjects = 16;
#if defined(__clang__)
constexpr const char* kCompiler = "clang " __clang_version__;
#elif defined(__GNUC__)
constexpr const char* kCompiler = "gcc " __VERSION__;
#else
constexpr const char* kCompiler = "unknown";
#endif

std::int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::uint64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::uint64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

std::int64_t heap_in_use_bytes() {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33)
  const struct mallinfo2 heap = ::mallinfo2();
  const std::size_t in_use = heap.uordblks + heap.hblkhd;
  // Under a sanitizer glibc's heap holds next to nothing: jetfan's memory is elsewhere.
  return in_use > 0 ? static_cast<std::int64_t>(in_use) : -1;
#else
  return -1;
#endif
}

std::int64_t open_fds() {
  std::error_code error;
  std::int64_t count = 0;
  for (std::filesystem::directory_iterator it("/proc/self/fd", error), end; !error && it != end; it.increment(error)) {
    ++count;
  }
  // The iterator's own descriptor is among those it lists.
  return error ? -1 : count - 1;
}

std::int64_t max_fds() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return -1;
  return static_cast<std::int64_t>(limit.rlim_cur);
}

double cpu_seconds() {
  rusage usage{};
  if (::getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  const auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

std::string upper(std::string_view word) {
  std::string out(word);
  for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

ControlPlane::ControlPlane(asio::io_context& io, const Config& config, ReloadFunction reload)
    : io_(io),
      config_(config),
      access_{AllowList{config.control.allow.uids, config.control.allow.gids},
              AllowList{config.control.allow_read.uids, config.control.allow_read.gids}},
      self_(static_cast<std::uint32_t>(::geteuid())),
      reload_(std::move(reload)),
      control_(io, config.control, *this),
      sampler_(io),
      rates_(kRateSpan),
      started_(Clock::now()),
      started_unix_ms_(unix_ms()) {
  control_.start();
  log_info("control.listening", {{"path", config.control.path}},
           "control socket {}: jetfan status, tail and reload connect here", config.control.path);
  // Connecting to a Unix socket needs write permission; anything past the owner's and the group's
  // lets more in than the allow lists were written for.
  if (config.control.mode & 0117) {
    log_warn("control.mode_wide", {{"path", config.control.path}, {"mode", fmt::format("{:04o}", config.control.mode)}},
             "control.mode {:04o} is wider than 0660: {}", config.control.mode,
             access_.open() ? "whoever can connect may send every command"
                            : "whoever can connect is held to control.allow and control.allow_read");
  }
  if (config.metrics) {
    metrics_ = std::make_unique<MetricsServer>(io, *config.metrics, static_cast<MetricsSource&>(*this));
    metrics_->start();
    const bool v6 = config.metrics->host.find(':') != std::string::npos;
    log_info("metrics.listening", {{"host", config.metrics->host}, {"port", metrics_->port()}},
             "metrics: serving http://{}{}{}:{}/metrics (and /ready, /live)", v6 ? "[" : "", config.metrics->host,
             v6 ? "]" : "", metrics_->port());
  }
  sample_rates();
}

ControlPlane::~ControlPlane() {
  if (dispatcher_) dispatcher_->set_observer(nullptr);
  if (dispatcher_) dispatcher_->set_consumer_sink(nullptr);
  auto tails = std::move(tails_);
  tails_.clear();
  for (auto& tail : tails) tail.session->close();
}

void ControlPlane::attach(Dispatcher& dispatcher, std::string client_version) {
  JETFAN_ON_IO_THREAD(thread_);
  dispatcher_ = &dispatcher;
  client_version_ = std::move(client_version);
  dispatcher.set_observer(this);
  dispatcher.set_consumer_sink([this](std::uint64_t id, const ConsumerAnswer& answer) {
    if (const auto* view = std::get_if<ServerConsumerView>(&answer)) {
      finish_status(id, *view, {});
    } else {
      finish_status(id, std::nullopt, std::get<std::string>(answer));
    }
  });
  refresh_names();
}

void ControlPlane::note_reload(bool applied) {
  ++(applied ? reloads_applied_ : reloads_refused_);
  refresh_names();
}

void ControlPlane::refresh_names() {
  names_.clear();
  for (const auto& handler : config_.handlers) names_.push_back(handler.name);
}

void ControlPlane::sample_rates() {
  if (dispatcher_) rates_.add(Clock::now(), dispatcher_->named_stats());
  sampler_.expires_after(kRateSample);
  sampler_.async_wait([this](const boost::system::error_code& error) {
    if (!error) sample_rates();
  });
}

void ControlPlane::on_control_command(const std::shared_ptr<ControlSession>& session, std::string_view line) {
  JETFAN_ON_IO_THREAD(thread_);
  const ControlRight right = right_needed(line);
  if (const std::string why = why_refused(access_, session->peer(), self_, right); !why.empty()) {
    log_warn("control.refused",
             {{"pid", session->peer().pid},
              {"uid", session->peer().uid},
              {"gid", session->peer().gid},
              {"command", std::string(line.substr(0, 64))}},
             "control: refused \"{}\" from pid {} uid {} gid {}: not on control.allow{}", line.substr(0, 64),
             session->peer().pid, session->peer().uid, session->peer().gid,
             right == ControlRight::kRead ? " or control.allow_read" : "");
    session->reply_and_close("ERR " + why + "\n");
    return;
  }
  const auto space = line.find_first_of(" \t");
  const std::string verb = upper(line.substr(0, space));
  std::string_view rest = space == std::string_view::npos ? std::string_view() : line.substr(space + 1);
  while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
  while (!rest.empty() && (rest.back() == ' ' || rest.back() == '\t')) rest.remove_suffix(1);
  if (verb == "STATUS" && (rest.empty() || upper(rest) == "JSON")) {
    status(session, !rest.empty());
  } else if (verb == "METRICS" && rest.empty()) {
    session->reply_and_close(metrics_text());
  } else if (verb == "TAIL") {
    tail(session, std::string(rest));
  } else if ((verb == "PAUSE" || verb == "RESUME") && !rest.empty()) {
    pause(session, std::string(rest), verb == "PAUSE");
  } else if (verb == "DLQ" || verb == "REDRIVE") {
    dead_letters(session, rest, verb == "REDRIVE");
  } else if (verb == "STEPDOWN" && rest.empty()) {
    step_down(session);
  } else if (verb == "UNREADABLE") {
    unreadable(session, rest);
  } else if (verb == "RELOAD" && rest.empty()) {
    const ReloadResult result = reload_();
    // "OK <what happened>" or "REFUSED <why>", then one indented line per detail.
    std::string reply = result.applied ? "OK" : "REFUSED";
    for (std::size_t i = 0; i < result.lines.size(); ++i) reply += (i == 0 ? " " : "\n  ") + result.lines[i];
    session->reply_and_close(reply + "\n");
  } else {
    session->reply_and_close("ERR unknown command \"" + std::string(line.substr(0, 64)) +
                             "\"; send one of STATUS, STATUS JSON, METRICS, TAIL [PATTERN], RELOAD, PAUSE HANDLER, "
                             "RESUME HANDLER, DLQ HANDLER, REDRIVE HANDLER ..., UNREADABLE [SEQ], STEPDOWN\n");
  }
}

void ControlPlane::pause(const std::shared_ptr<ControlSession>& session, const std::string& handler, bool paused) {
  if (!dispatcher_) {
    session->reply_and_close("ERR not serving yet\n");
    return;
  }
  const auto done = dispatcher_->set_paused(handler, paused);
  if (!done) {
    std::string names;
    for (const auto& name : names_) names += (names.empty() ? "" : ", ") + name;
    session->reply_and_close("ERR no handler \"" + handler.substr(0, 64) + "\" is declared (there are: " + names +
                             ")\n");
    return;
  }
  session->reply_and_close("OK " + *done + "\n");
}

void ControlPlane::unreadable(const std::shared_ptr<ControlSession>& session, std::string_view rest) {
  if (!dispatcher_) {
    session->reply_and_close("ERR not serving yet\n");
    return;
  }
  if (rest.empty()) {
    const auto lines = dispatcher_->unreadable_list();
    std::string reply;
    for (const auto& line : lines) reply += line + "\n";
    session->reply_and_close(reply + "OK " + std::to_string(lines.size()) +
                             " message(s) with a subject the NATS client cannot read found since start\n");
    return;
  }
  std::uint64_t seq = 0;
  const auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), seq);
  if (error != std::errc() || end != rest.data() + rest.size() || seq == 0) {
    session->reply_and_close("ERR \"" + std::string(rest.substr(0, 64)) + "\" is not a stream sequence\n");
    return;
  }
  const auto refused = dispatcher_->examine_unreadable(
      seq, [session](bool, const std::string& line) { session->reply_and_close(line + "\n"); });
  if (refused) session->reply_and_close("ERR " + *refused + "\n");
}

void ControlPlane::step_down(const std::shared_ptr<ControlSession>& session) {
  if (!dispatcher_) {
    session->reply_and_close("ERR not serving yet\n");
    return;
  }
  const auto done = dispatcher_->step_down();
  if (!done) {
    session->reply_and_close("ERR consumer \"" + config_.consumer.durable +
                             "\" has no pinned_client priority group: there is no pin to give up\n");
    return;
  }
  if (!done->done) {
    session->reply_and_close("ERR " + done->words + "\n");
    return;
  }
  log_info("pin.step_down", {{"consumer", config_.consumer.durable}}, "control: step-down: {}", done->words);
  session->reply_and_close("OK " + done->words + "\n");
}

void ControlPlane::tail(const std::shared_ptr<ControlSession>& session, std::string pattern) {
  if (!pattern.empty()) {
    if (const auto why = pattern_error(pattern)) {
      session->reply_and_close("ERR pattern \"" + pattern + "\": " + *why + "\n");
      return;
    }
  }
  if (tails_.size() >= kMaxTails) {
    session->reply_and_close("ERR already " + std::to_string(kMaxTails) + " tails; close one first\n");
    return;
  }
  session->start_stream("OK tailing " + (pattern.empty() ? std::string("every message") : pattern) + "\n");
  tails_.push_back(Tail{session, std::move(pattern)});
  tailing_ = true;
  const std::string shown = tails_.back().pattern.empty() ? std::string("#") : tails_.back().pattern;
  log_info("tail.started", {{"tail", session->id()}, {"pattern", shown}}, "control: tail {} started ({})",
           session->id(), shown);
}

void ControlPlane::on_control_closed(ControlSession& session) {
  JETFAN_ON_IO_THREAD(thread_);
  const auto found =
      std::find_if(tails_.begin(), tails_.end(), [&](const Tail& t) { return t.session.get() == &session; });
  if (found == tails_.end()) return;
  dropped_by_closed_tails_ += session.dropped();
  log_info("tail.ended", {{"tail", session.id()}, {"missed", session.dropped()}},
           "control: tail {} ended; it missed {} message(s) by reading too slowly", session.id(), session.dropped());
  tails_.erase(found);
  tailing_ = !tails_.empty();
}

void ControlPlane::on_tail(const TailItem& item) {
  record_.clear();
  for (const auto& tail : tails_) {
    if (!tail.pattern.empty() && !topic_matches(tail.pattern, item.key)) continue;
    if (record_.empty()) append_tail_record(record_, item, names_);
    tail.session->stream(record_);
  }
}

void ControlPlane::on_no_recipient(std::string_view key) {
  const std::size_t newest = (unmatched_next_ + unmatched_.size() - 1) % unmatched_.size();
  if (unmatched_[newest] == key) return;
  unmatched_[unmatched_next_].assign(key);
  unmatched_next_ = (unmatched_next_ + 1) % unmatched_.size();
}

void ControlPlane::on_unroutable(std::string_view subject) {
  for (auto& known : unroutable_) {
    if (known.subject == subject) {
      ++known.count;
      return;
    }
  }
  if (unroutable_.size() < kUnroutableSubjects) unroutable_.push_back(SubjectCount{std::string(subject), 1});
}

void ControlPlane::status(const std::shared_ptr<ControlSession>& session, bool json) {
  const std::uint64_t id = next_status_++;
  PendingStatus pending{session, json, std::make_unique<asio::steady_timer>(io_)};
  if (!dispatcher_ || !dispatcher_->ask_consumer_info(id)) {
    pending_.emplace(id, std::move(pending));
    finish_status(id, std::nullopt, dispatcher_ ? "not connected to the server" : "not bound to the consumer yet");
    return;
  }
  pending.timeout->expires_after(kServerAnswer);
  pending.timeout->async_wait([this, id](const boost::system::error_code& error) {
    if (!error) finish_status(id, std::nullopt, "no answer from the server within 2s");
  });
  pending_.emplace(id, std::move(pending));
}

void ControlPlane::finish_status(std::uint64_t id, std::optional<ServerConsumerView> view, std::string error) {
  JETFAN_ON_IO_THREAD(thread_);
  auto found = pending_.find(id);
  if (found == pending_.end()) return;  // answered already (a late answer after the timeout)
  PendingStatus pending = std::move(found->second);
  pending_.erase(found);
  pending.timeout->cancel();
  StatusSnapshot s = snapshot();
  s.server = std::move(view);
  s.server_error = std::move(error);
  pending.session->reply_and_close(pending.json ? render_status_json(s) : render_status_text(s));
}

StatusSnapshot ControlPlane::snapshot() const {
  const TimePoint now = Clock::now();
  StatusSnapshot s;
  s.version = kVersion;
  s.now_unix_ms = unix_ms();
  s.uptime_seconds = std::chrono::duration<double>(now - started_).count();
  s.start_time_unix = static_cast<double>(started_unix_ms_) / 1000;
  s.config_file = config_.file;
  s.stream = config_.consumer.stream;
  s.durable = config_.consumer.durable;
  if (dispatcher_) {
    dispatcher_->fill_status(s, rates_, now, s.now_unix_ms);
  } else {
    s.state = "starting";
    s.ack_policy = "?";
    s.nats_connected = false;  // or not yet bound: jetfan_nats_connected says 1 once it serves
  }
  for (std::size_t i = 0; i < unmatched_.size(); ++i) {
    const auto& key = unmatched_[(unmatched_next_ + i) % unmatched_.size()];
    if (!key.empty()) s.recent_unmatched_keys.push_back(key);
  }
  s.unroutable_subjects = unroutable_;
  s.tail_dropped = dropped_by_closed_tails_;
  for (const auto& tail : tails_) {
    s.tails.push_back(TailView{tail.pattern, tail.session->dropped()});
    s.tail_dropped += tail.session->dropped();
  }
  s.reloads_applied = reloads_applied_;
  s.reloads_refused = reloads_refused_;
  s.resident_memory_bytes = resident_bytes();
  s.heap_in_use_bytes = heap_in_use_bytes();
  s.open_fds = open_fds();
  s.max_fds = max_fds();
  s.cpu_seconds = cpu_seconds();
  s.cnats_version = client_version_;
  s.compiler = kCompiler;
  return s;
}

std::string ControlPlane::metrics_text() {
  JETFAN_ON_IO_THREAD(thread_);
  return render_prometheus(snapshot());
}

std::string ControlPlane::not_ready_reason() {
  if (!dispatcher_) return "not bound to the consumer yet";
  if (!dispatcher_->serving()) return "stopping";
  const auto reasons = dispatcher_->not_consuming();
  return reasons.empty() ? std::string() : reasons.front();
}

void ControlPlane::dead_letters(const std::shared_ptr<ControlSession>& session, std::string_view rest, bool redrive) {
  DeadLetterJob job;
  if (const auto why = parse_dead_letter_command(rest, redrive, job)) {
    session->reply_and_close(
        std::string("ERR ") + (redrive ? "REDRIVE" : "DLQ") + " " + *why +
        (redrive ? "; send REDRIVE HANDLER (ALL | A[-B]) [DRY-RUN]\n" : "; send DLQ HANDLER [A[-B]] [JSON]\n"));
    return;
  }
  if (!dispatcher_) {
    session->reply_and_close("ERR not serving yet\n");
    return;
  }
  const bool json = job.json;
  // Streaming from the start: the job may end before start_dead_letter_job returns.
  session->start_stream("");
  DeadLetterJobOutput out;
  out.line = [session, json](const std::string& line) { return json || session->stream(line + "\n"); };
  out.done = [session](bool, const std::string& line) { session->reply_and_close(line + "\n"); };
  if (const auto refused = dispatcher_->start_dead_letter_job(job, std::move(out))) {
    session->reply_and_close("ERR " + *refused + "\n");
  }
}

}  // namespace jetfan
