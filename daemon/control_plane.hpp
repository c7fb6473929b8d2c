#pragma once
// ControlPlane: what an operator sees of a running jetfan and how they change it. It serves the
// control socket (STATUS, STATUS JSON, METRICS, TAIL, RELOAD; daemon/CONTROL.md) and, when
// configured, the HTTP endpoint for Prometheus and probes. It builds the StatusSnapshot the
// renderers in observe/ turn into text, JSON and the Prometheus format, asking the server for its
// view of the consumer without blocking: for status on demand, for the metrics every few seconds.
//
// It exists before the consumer is bound (status says "starting", /live answers, /ready does not)
// and is attached to the Dispatcher once jetfan serves. Tails are fed by the Dispatcher through
// ArrivalObserver; each tail has its own bounded output and drops for itself alone when it falls
// behind (ControlSession), so an observer never holds up a message or an ack.
//
// It reaches the server only through the Dispatcher (its ConsumerWatch asks for the consumer's
// info), so it runs on a FakeUpstream as it does on cnats.
//
// Thread: the io_context thread only. Lifetime: it must be destroyed before the Dispatcher it is
// attached to (it detaches from it in its destructor).

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "arrival_observer.hpp"
#include "config.hpp"
#include "control_access.hpp"
#include "control_server.hpp"
#include "io_thread.hpp"
#include "metrics_server.hpp"
#include "rate_window.hpp"
#include "reloader.hpp"
#include "status_snapshot.hpp"

namespace jetfan {

class Dispatcher;

class ControlPlane final : private ControlOwner, private MetricsSource, public ArrivalObserver {
 public:
  using ReloadFunction = std::function<ReloadResult()>;

  // Binds the control socket and, if configured, the metrics endpoint. Throws StartupError when
  // either cannot be had. `config` must outlive it.
  ControlPlane(boost::asio::io_context& io, const Config& config, ReloadFunction reload);
  ~ControlPlane();
  ControlPlane(const ControlPlane&) = delete;
  ControlPlane& operator=(const ControlPlane&) = delete;

  // Once jetfan serves. `client_version`: the NATS client library's version, for status.
  void attach(Dispatcher& dispatcher, std::string client_version);
  // After every reload attempt, from SIGHUP or RELOAD.
  void note_reload(bool applied);

 private:
  struct Tail {
    std::shared_ptr<ControlSession> session;
    std::string pattern;  // empty: everything
  };
  struct PendingStatus {
    std::shared_ptr<ControlSession> session;
    bool json = false;
    std::unique_ptr<boost::asio::steady_timer> timeout;
  };

  void on_control_command(const std::shared_ptr<ControlSession>& session, std::string_view line) override;
  void on_control_closed(ControlSession& session) override;
  std::string metrics_text() override;
  std::string not_ready_reason() override;
  void on_tail(const TailItem& item) override;
  void on_no_recipient(std::string_view key) override;
  void on_unroutable(std::string_view subject) override;

  void status(const std::shared_ptr<ControlSession>& session, bool json);
  void finish_status(std::uint64_t id, std::optional<ServerConsumerView> view, std::string error);

  void tail(const std::shared_ptr<ControlSession>& session, std::string pattern);
  void step_down(const std::shared_ptr<ControlSession>& session);
  void pause(const std::shared_ptr<ControlSession>& session, const std::string& handler, bool paused);
  // DLQ and REDRIVE: the words read by parse_dead_letter_command, the job the dispatcher's.
  void dead_letters(const std::shared_ptr<ControlSession>& session, std::string_view rest, bool redrive);
  void unreadable(const std::shared_ptr<ControlSession>& session, std::string_view rest);
  StatusSnapshot snapshot() const;
  void sample_rates();
  void refresh_names();

  boost::asio::io_context& io_;
  const Config& config_;
  const ControlAccess access_;  // control.allow and control.allow_read: fixed until a restart
  const std::uint32_t self_;    // jetfan's own uid, always allowed
  ReloadFunction reload_;
  IoThread thread_;
  Dispatcher* dispatcher_ = nullptr;
  std::string client_version_;
  ControlServer control_;
  std::unique_ptr<MetricsServer> metrics_;
  boost::asio::steady_timer sampler_;
  RateWindow rates_;
  std::chrono::steady_clock::time_point started_;
  std::int64_t started_unix_ms_ = 0;

  std::vector<Tail> tails_;
  std::vector<std::string> names_;  // handler names by index, for tail records
  std::string record_;              // reused for each tail record
  std::uint64_t dropped_by_closed_tails_ = 0;
  std::array<std::string, 8> unmatched_;  // ring of recent keys nobody matched
  std::size_t unmatched_next_ = 0;
  std::vector<SubjectCount> unroutable_;  // at most kUnroutableSubjects distinct subjects
  std::map<std::uint64_t, PendingStatus> pending_;
  std::uint64_t next_status_ = 1;
  std::uint64_t reloads_applied_ = 0, reloads_refused_ = 0;
};

}  // namespace jetfan
