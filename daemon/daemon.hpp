#pragma once
// Daemon: `jetfan serve`, start to finish. Connects to NATS (retrying while no server answers),
// binds the consumer, derives the settings it serves with, then builds the Dispatcher and runs the
// io_context until SIGTERM or SIGINT and the drain that follows. A second signal stops at once.
//
// Thread: everything runs on the thread that calls run(); it owns all dispatch state.

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include <memory>

#include "config.hpp"
#include "control_plane.hpp"
#include "dispatcher.hpp"
#include "handler_listener.hpp"
#include "jetstream_reader.hpp"
#include "message_bytes.hpp"
#include "reloader.hpp"
#include "span_exporter.hpp"
#include "systemd_notifier.hpp"
#include "timekeeper.hpp"

namespace jetfan {

class Daemon {
 public:
  // `log_level_pinned`: --log-level was given, and a reload leaves the level alone.
  explicit Daemon(Config config, bool log_level_pinned = false);
  ~Daemon();

  // Returns the exit status. Throws StartupError for what stops jetfan before it serves.
  int run();

 private:
  void wait_for_signal();
  void on_signal(int signal);
  // Before the first pull: reads from the stream what an earlier reader may have left unacked, for
  // the ordered handlers to wait for (at most max_held messages, read within half an AckWait;
  // beyond, they all wait).
  void expect_outstanding(const ConsumerFacts& facts, AckPolicy ack_policy, std::size_t max_held, Duration ack_wait);
  // The pin of a pinned_client group came to jetfan: the consumer's info read again, and what the
  // former owner left unacked expected as after a restart. Blocks the io thread for the answers
  // (at most about 5 s and half an AckWait), while jetfan delivers nothing anyway.
  void take_over(AckPolicy ack_policy, std::size_t max_held, Duration ack_wait);
  // Reads the confirmation ledger's records (LedgerReader) into the dispatcher, at start and at a
  // takeover; nothing when config.ledger is not set. Waits at most `budget`.
  void load_ledger(const ConsumerFacts& facts, Duration budget);
  // Starts the span exporter of config.tracing; throws StartupError if it cannot be made.
  void start_tracing();
  // SIGHUP and the control socket's RELOAD.
  ReloadResult reload();

  Config config_;
  MessageBytesArena arena_;  // before io_: pending operations destroyed with it may hold the last messages
  boost::asio::io_context io_{1};
  boost::asio::signal_set signals_;
  JetStreamReader reader_;
  AsioTimekeeper time_;
  SystemdNotifier notifier_;
  // Tracing (config tracing:): the exporter outlives the dispatcher, which offers it spans until it goes.
  std::unique_ptr<SpanExporter> exporter_;
  std::unique_ptr<SpanExporterSink> span_sink_;
  std::unique_ptr<HandlerListener> listener_;  // set once the consumer is bound
  std::unique_ptr<Dispatcher> dispatcher_;     // likewise
  bool stopping_ = false;                      // a signal came before serving began
  bool log_level_pinned_ = false;
  std::unique_ptr<ControlPlane> control_;  // from the start: status and /live answer while connecting
  std::unique_ptr<Reloader> reloader_;     // set once serving
};

}  // namespace jetfan
