#include "timekeeper.hpp"

#include <chrono>

namespace jetfan {

namespace {
std::int64_t system_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}
}  // namespace

AsioTimekeeper::AsioTimekeeper(boost::asio::io_context& io)
    : timers_{boost::asio::steady_timer(io), boost::asio::steady_timer(io), boost::asio::steady_timer(io),
              boost::asio::steady_timer(io)} {}

TimePoint AsioTimekeeper::now() const { return std::chrono::steady_clock::now(); }
std::int64_t AsioTimekeeper::wall_now_ns() const { return system_now_ns(); }

void AsioTimekeeper::set(Alarm alarm, TimePoint at) {
  auto& timer = timers_[static_cast<std::size_t>(alarm)];
  // expires_at cancels the wait before: its handler sees operation_aborted and does nothing.
  timer.expires_at(at);
  timer.async_wait([this, alarm](const boost::system::error_code& error) {
    if (!error && fired_) fired_(alarm);
  });
}

void AsioTimekeeper::cancel(Alarm alarm) { timers_[static_cast<std::size_t>(alarm)].cancel(); }

ManualTimekeeper::ManualTimekeeper(TimePoint start, std::int64_t wall_start_ns)
    : start_(start), now_(start), wall_start_ns_(wall_start_ns) {}

std::int64_t ManualTimekeeper::wall_now_ns() const {
  return wall_start_ns_ + std::chrono::duration_cast<std::chrono::nanoseconds>(now_ - start_).count();
}

void ManualTimekeeper::advance(Duration by, std::size_t max_fired) {
  const TimePoint until = now_ + by;
  for (std::size_t fired = 0; fired < max_fired; ++fired) {
    std::optional<std::size_t> next;
    for (std::size_t a = 0; a < kAlarmCount; ++a) {
      if (alarms_[a] && *alarms_[a] <= until && (!next || *alarms_[a] < *alarms_[*next])) next = a;
    }
    if (!next) break;
    if (*alarms_[*next] > now_) now_ = *alarms_[*next];
    alarms_[*next].reset();
    if (fired_) fired_(static_cast<Alarm>(*next));
  }
  now_ = until;
}

}  // namespace jetfan
