#pragma once
// Logging: one line per event on stderr, which journald picks up under systemd. Each event has a
// message for people and, when logged with log_event, an event name and its facts as fields for
// machines:
//
//   text  "2026-11-29T21:00:57.123+01:00 warning <message>"  (local time, with its UTC offset)
//   json  {"time":"2026-11-29T20:00:57.123Z","level":"warning","event":"delivery.failed",
//          "message":"<message>","handler":"audit","seq":42,...}  (one object a line)
//
// When stderr is the journal (systemd sets JOURNAL_STREAM to its device and inode, and it is a
// socket), each event goes to journald with sd_journal_send: MESSAGE, PRIORITY,
// SYSLOG_IDENTIFIER=jetfan, JETFAN_EVENT and one JETFAN_<KEY> per field (`journalctl
// JETFAN_HANDLER=audit`). Should journald not take it, or should JOURNAL_STREAM name a stderr that
// is not a socket, the line goes to stderr instead, with no timestamp of its own (journald has it)
// and starting with its syslog priority, "<4>" for a warning (sd-daemon.h's SD_WARNING), so
// `journalctl -p warning` selects it.
//
// Plain spdlog calls still work; their lines carry no event and no fields.
//
// Thread: setup before any other thread logs; logging itself is thread-safe. The fields of an event
// are written before log_event returns; nothing keeps a reference to them.

#include <spdlog/spdlog.h>

#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "config.hpp"

namespace jetfan {

// True when stderr is the stream systemd connected to the journal.
bool stderr_is_journal();

// `text` as one line a terminal shows as it is: printable ASCII and well-formed UTF-8 pass; CR, LF
// and tab become \r, \n and \t, and every other control byte (ESC, DEL, C1 controls) and every
// byte of malformed UTF-8 \xNN. The text format and the journal's MESSAGE are written through it, so
// a string from a peer (a HELLO's name, a TERM's reason) can neither forge a line nor move the
// cursor; JSON escapes by itself. Pure.
std::string escape_log_text(std::string_view text);

// Installs the default logger (stderr, unbuffered lines) with the given format and level.
void setup_logging(LogFormat format, const std::string& level, bool journal);
// Changes the level of the installed logger (reload, --log-level).
void set_log_level(const std::string& level);

// One fact of an event. Keys are lower snake case ("handler", "pid", "seq") and never one of time,
// level, event or message; in the journal they become JETFAN_HANDLER, JETFAN_PID, ... Numbers stay
// numbers in JSON. The key must outlive the log_event call (a literal, in practice).
struct LogField {
  using Value = std::variant<std::string, std::int64_t, std::uint64_t, bool>;

  LogField(std::string_view k, std::string_view v) : key(k), value(std::string(v)) {}
  LogField(std::string_view k, const std::string& v) : key(k), value(v) {}
  LogField(std::string_view k, const char* v) : key(k), value(std::string(v)) {}
  LogField(std::string_view k, bool v) : key(k), value(v) {}
  // A double would become a bool: write it as a string, in the precision it deserves.
  LogField(std::string_view k, double v) = delete;
  template <std::signed_integral T>
  LogField(std::string_view k, T v) : key(k), value(static_cast<std::int64_t>(v)) {}
  template <std::unsigned_integral T>
  requires(!std::same_as<T, bool>) LogField(std::string_view k, T v) : key(k), value(static_cast<std::uint64_t>(v)) {}

  std::string_view key;
  Value value;
};

using LogFields = std::initializer_list<LogField>;

// Writes one event: `event` names what happened ("handler.connected", "reload.refused"; dotted lower
// snake case, stable for scripts), `fields` its facts, and the message is formatted as spdlog does.
void write_event(spdlog::level::level_enum level, std::string_view event, LogFields fields, std::string_view message);

template <typename... Args>
void log_event(spdlog::level::level_enum level, std::string_view event, LogFields fields,
               fmt::format_string<Args...> format, Args&&... args) {
  if (!spdlog::should_log(level)) return;
  write_event(level, event, fields, fmt::format(format, std::forward<Args>(args)...));
}

// One per level, for call sites.
template <typename... Args>
void log_trace(std::string_view event, LogFields fields, fmt::format_string<Args...> format, Args&&... args) {
  log_event(spdlog::level::trace, event, fields, format, std::forward<Args>(args)...);
}
template <typename... Args>
void log_debug(std::string_view event, LogFields fields, fmt::format_string<Args...> format, Args&&... args) {
  log_event(spdlog::level::debug, event, fields, format, std::forward<Args>(args)...);
}
template <typename... Args>
void log_info(std::string_view event, LogFields fields, fmt::format_string<Args...> format, Args&&... args) {
  log_event(spdlog::level::info, event, fields, format, std::forward<Args>(args)...);
}
template <typename... Args>
void log_warn(std::string_view event, LogFields fields, fmt::format_string<Args...> format, Args&&... args) {
  log_event(spdlog::level::warn, event, fields, format, std::forward<Args>(args)...);
}
template <typename... Args>
void log_error(std::string_view event, LogFields fields, fmt::format_string<Args...> format, Args&&... args) {
  log_event(spdlog::level::err, event, fields, format, std::forward<Args>(args)...);
}
template <typename... Args>
void log_critical(std::string_view event, LogFields fields, fmt::format_string<Args...> format, Args&&... args) {
  log_event(spdlog::level::critical, event, fields, format, std::forward<Args>(args)...);
}

// For tests: while one lives, every event is kept here instead of being written (on any thread);
// the logger before it comes back when it goes. One at a time.
struct CapturedEvent {
  spdlog::level::level_enum level;
  std::string event;
  std::string message;
  std::vector<std::pair<std::string, LogField::Value>> fields;

  const LogField::Value* field(std::string_view key) const;
};
struct CaptureSink;
class LogCapture {
 public:
  LogCapture();
  ~LogCapture();
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  std::vector<CapturedEvent> events() const;
  // The events named `event`.
  std::vector<CapturedEvent> named(std::string_view event) const;

 private:
  std::shared_ptr<spdlog::logger> before_;
  std::shared_ptr<CaptureSink> sink_;
};

}  // namespace jetfan
