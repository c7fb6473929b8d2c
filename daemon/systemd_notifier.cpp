#include "systemd_notifier.hpp"
#include "logging.hpp"

#include <systemd/sd-daemon.h>

#include <spdlog/spdlog.h>

namespace jetfan {

SystemdNotifier::SystemdNotifier(boost::asio::io_context& io) : watchdog_(io) {}

void SystemdNotifier::ready(const std::string& status) {
  last_status_ = status;
  sd_notifyf(0, "READY=1\nSTATUS=%s", status.c_str());
}

void SystemdNotifier::status(const std::string& status) {
  if (status == last_status_) return;
  last_status_ = status;
  sd_notifyf(0, "STATUS=%s", status.c_str());
}

void SystemdNotifier::stopping() { sd_notify(0, "STOPPING=1"); }

void SystemdNotifier::extend_timeout(Duration more) {
  sd_notifyf(0, "EXTEND_TIMEOUT_USEC=%lld",
             static_cast<long long>(std::chrono::duration_cast<std::chrono::microseconds>(more).count()));
}

std::optional<Duration> SystemdNotifier::start_watchdog() {
  std::uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0) return std::nullopt;
  interval_ = std::max(watchdog_ping_interval(std::chrono::microseconds(usec)), Duration(1));
  log_info("watchdog.started", {{"watchdog_usec", usec}, {"interval_ms", interval_.count()}},
           "systemd watchdog: WATCHDOG_USEC={}; pinging every {}ms from the event loop", usec, interval_.count());
  ping();
  return interval_;
}

void SystemdNotifier::stop_watchdog() { watchdog_.cancel(); }

void SystemdNotifier::ping() {
  sd_notify(0, "WATCHDOG=1");
  watchdog_.expires_after(interval_);
  watchdog_.async_wait([this](const boost::system::error_code& error) {
    if (!error) ping();
  });
}

}  // namespace jetfan
