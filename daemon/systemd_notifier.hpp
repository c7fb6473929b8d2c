#pragma once
// SystemdNotifier: what jetfan tells systemd when it runs as a Type=notify service. Every call does
// nothing when NOTIFY_SOCKET is not set, so the same binary runs with and without systemd.
//
//   READY=1              once the consumer is bound and the handler socket listens
//   STATUS=...           handlers connected, messages held and in flight; sent when it changes
//   WATCHDOG=1           from the event loop itself, every WATCHDOG_USEC / 2, so a wedged loop
//                        stops them and systemd restarts jetfan
//   STOPPING=1           when the drain begins
//   EXTEND_TIMEOUT_USEC  while a drain runs, so a long drain_timeout is not cut short
//
// Thread: the io_context thread.

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <optional>
#include <string>

#include "time.hpp"

namespace jetfan {

// How often to send WATCHDOG=1 for a WATCHDOG_USEC of `timeout`: twice per timeout, as sd_notify(3)
// recommends, so one late wake-up never misses it.
constexpr Duration watchdog_ping_interval(std::chrono::microseconds timeout) {
  return std::chrono::duration_cast<Duration>(timeout / 2);
}

class SystemdNotifier {
 public:
  explicit SystemdNotifier(boost::asio::io_context& io);

  void ready(const std::string& status);
  // Sent only when it differs from the last one.
  void status(const std::string& status);
  void stopping();
  // Asks systemd to allow this much more time, counted from now, for the stop to finish.
  void extend_timeout(Duration more);
  // Starts the watchdog pings if systemd asked for them (WATCHDOG_USEC); the interval, if so.
  std::optional<Duration> start_watchdog();
  void stop_watchdog();

 private:
  void ping();

  boost::asio::steady_timer watchdog_;
  Duration interval_{0};
  std::string last_status_;
};

}  // namespace jetfan
