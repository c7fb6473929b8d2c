#pragma once
// Timekeeper: the Dispatcher's clocks and alarms, behind one seam, so the dispatcher can be driven
// on real time (AsioTimekeeper, in the daemon) or on time a test or the session fuzzer moves by
// hand (ManualTimekeeper), with the same code.
//
// The dispatcher has a fixed set of alarms; each is either unset or set for one time point, and
// setting it again replaces that time. A due alarm is handed to the callback given to on_fired
// once, and is then unset.
//
// Thread: the io_context thread; the callback runs there too, never from inside set() or cancel().

#include <array>
#include <cstdint>
#include <functional>
#include <optional>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "time.hpp"

namespace jetfan {

enum class Alarm { kWakeup, kHousekeeping, kDrain, kProbe };
inline constexpr std::size_t kAlarmCount = 4;

class Timekeeper {
 public:
  using Fired = std::function<void(Alarm)>;

  virtual TimePoint now() const = 0;
  // The wall clock, in nanoseconds since the Unix epoch (for ages of messages and of connections).
  virtual std::int64_t wall_now_ns() const = 0;
  virtual void set(Alarm alarm, TimePoint at) = 0;
  virtual void cancel(Alarm alarm) = 0;
  // Where due alarms go; set once, before any alarm is set.
  virtual void on_fired(Fired fired) = 0;

 protected:
  ~Timekeeper() = default;
};

// steady_clock and system_clock, with one Asio timer per alarm.
class AsioTimekeeper final : public Timekeeper {
 public:
  explicit AsioTimekeeper(boost::asio::io_context& io);
  TimePoint now() const override;
  std::int64_t wall_now_ns() const override;
  void set(Alarm alarm, TimePoint at) override;
  void cancel(Alarm alarm) override;
  void on_fired(Fired fired) override { fired_ = std::move(fired); }

 private:
  std::array<boost::asio::steady_timer, kAlarmCount> timers_;
  Fired fired_;
};

// Time that moves only when advance() says: alarms fire in the order they are due, each at its own
// time (now() reads that time inside the callback), including alarms that callbacks set meanwhile.
class ManualTimekeeper final : public Timekeeper {
 public:
  // `wall_start_ns`: the wall clock at `start`; it moves with now().
  explicit ManualTimekeeper(TimePoint start, std::int64_t wall_start_ns = 0);
  TimePoint now() const override { return now_; }
  std::int64_t wall_now_ns() const override;
  void set(Alarm alarm, TimePoint at) override { alarms_[static_cast<std::size_t>(alarm)] = at; }
  void cancel(Alarm alarm) override { alarms_[static_cast<std::size_t>(alarm)].reset(); }
  void on_fired(Fired fired) override { fired_ = std::move(fired); }

  // Moves time forward by `by`, firing every alarm due meanwhile. An alarm re-set to a time at or
  // before now by its own callback fires again, at most `max_fired` alarms in all (a bound for a
  // driver that must not spin).
  void advance(Duration by, std::size_t max_fired = 100000);

 private:
  TimePoint start_;
  TimePoint now_;
  std::int64_t wall_start_ns_;
  std::array<std::optional<TimePoint>, kAlarmCount> alarms_;
  Fired fired_;
};

}  // namespace jetfan
