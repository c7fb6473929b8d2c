#include "logging.hpp"

#include <sys/stat.h>
#include <sys/uio.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>
#include <unistd.h>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <type_traits>
#include <vector>

namespace jetfan {
namespace {

// Syslog priorities as sd-daemon.h defines them (SD_ERR "<3>", SD_WARNING "<4>", ...).
const char* priority_prefix(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::critical:
      return SD_CRIT;
    case spdlog::level::err:
      return SD_ERR;
    case spdlog::level::warn:
      return SD_WARNING;
    case spdlog::level::info:
      return SD_INFO;
    default:
      return SD_DEBUG;
  }
}

// The event being written on this thread, for the sink: spdlog's log_msg carries only the text.
struct EventContext {
  std::string_view event;
  LogFields fields;
};
thread_local const EventContext* current_event = nullptr;

int syslog_priority(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::critical:
      return 2;
    case spdlog::level::err:
      return 3;
    case spdlog::level::warn:
      return 4;
    case spdlog::level::info:
      return 6;
    default:
      return 7;
  }
}

std::string field_text(const LogField::Value& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) {
          return v;
        } else if constexpr (std::is_same_v<T, bool>) {
          return v ? "true" : "false";
        } else {
          return std::to_string(v);
        }
      },
      value);
}

// "handler" -> "JETFAN_HANDLER": journal field names are upper case letters, digits and '_'.
std::string journal_name(std::string_view key) {
  std::string name = "JETFAN_";
  for (const char c : key) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    name += keep ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : '_';
  }
  return name;
}

// Local time for people reading a terminal, with its offset so the zone is never a guess; UTC,
// marked, in JSON for machines.
std::string timestamp(spdlog::log_clock::time_point time, bool utc) {
  const auto since_epoch = time.time_since_epoch();
  const std::time_t seconds = std::chrono::duration_cast<std::chrono::seconds>(since_epoch).count();
  const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(since_epoch).count() % 1000;
  std::tm parts{};
  if (utc) {
    gmtime_r(&seconds, &parts);
  } else {
    localtime_r(&seconds, &parts);
  }
  char text[48];
  std::size_t length = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &parts);
  length +=
      static_cast<std::size_t>(std::snprintf(text + length, sizeof text - length, ".%03d", static_cast<int>(millis)));
  if (utc) return std::string(text, length) + "Z";
  char offset[8];  // "+0100" -> "+01:00", as RFC 3339 writes it
  if (std::strftime(offset, sizeof offset, "%z", &parts) != 5) return std::string(text, length);
  return std::string(text, length) + std::string(offset, 3) + ":" + std::string(offset + 3, 2);
}

// Writes each event as a line on stderr, or to journald with its fields.
class EventSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  EventSink(LogFormat format, bool journal, bool native) : format_(format), journal_(journal), native_(native) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    const std::string_view message(msg.payload.data(), msg.payload.size());
    if (native_ && send_to_journal(msg.level, message)) return;
    std::string line;
    if (journal_) line = priority_prefix(msg.level);
    const auto level = spdlog::level::to_string_view(msg.level);
    if (format_ == LogFormat::kJson) {
      nlohmann::json object;
      if (!journal_) object["time"] = timestamp(msg.time, true);
      object["level"] = std::string_view(level.data(), level.size());
      if (current_event) object["event"] = current_event->event;
      // A message is text we made, but it can quote what a peer sent: never let that break the line.
      object["message"] = message;
      if (current_event) {
        for (const auto& field : current_event->fields) {
          std::visit([&](const auto& v) { object[std::string(field.key)] = v; }, field.value);
        }
      }
      line += object.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    } else {
      if (!journal_) line += timestamp(msg.time, false) + " ";
      line.append(level.data(), level.size());
      line += ' ';
      line += escape_log_text(message);
    }
    line += '\n';
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::fflush(stderr);
  }

  void flush_() override { std::fflush(stderr); }

 private:
  // False when journald does not take it (not running, say): the caller writes the line instead.
  static bool send_to_journal(spdlog::level::level_enum level, std::string_view message) {
    std::vector<std::string> entries;
    entries.push_back("MESSAGE=" + escape_log_text(message));
    entries.push_back("PRIORITY=" + std::to_string(syslog_priority(level)));
    entries.emplace_back("SYSLOG_IDENTIFIER=jetfan");
    if (current_event) {
      entries.push_back("JETFAN_EVENT=" + std::string(current_event->event));
      for (const auto& field : current_event->fields) {
        entries.push_back(journal_name(field.key) + "=" + field_text(field.value));
      }
    }
    std::vector<iovec> parts;
    parts.reserve(entries.size());
    for (auto& entry : entries) parts.push_back(iovec{entry.data(), entry.size()});
    return sd_journal_sendv(parts.data(), static_cast<int>(parts.size())) >= 0;
  }

  LogFormat format_;
  bool journal_;
  bool native_;  // stderr is journald's socket: send it the fields too
};

bool stderr_is_socket() {
  struct stat info {};
  return ::fstat(STDERR_FILENO, &info) == 0 && S_ISSOCK(info.st_mode);
}

}  // namespace

bool stderr_is_journal() {
  const char* stream = std::getenv("JOURNAL_STREAM");
  if (!stream) return false;
  unsigned long long device = 0, inode = 0;
  if (std::sscanf(stream, "%llu:%llu", &device, &inode) != 2) return false;
  struct stat info {};
  if (::fstat(STDERR_FILENO, &info) != 0) return false;
  return info.st_dev == device && info.st_ino == inode;
}

std::string escape_log_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  const auto escape = [&out](unsigned char byte) {
    char hex[5];
    std::snprintf(hex, sizeof hex, "\\x%02x", byte);
    out += hex;
  };
  std::size_t i = 0;
  while (i < text.size()) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte >= 0x20 && byte < 0x7f) {
      out += static_cast<char>(byte);
      ++i;
      continue;
    }
    if (byte < 0x80) {
      if (byte == '\n') {
        out += "\\n";
      } else if (byte == '\r') {
        out += "\\r";
      } else if (byte == '\t') {
        out += "\\t";
      } else {
        escape(byte);  // ESC starts a terminal's control sequence; DEL and the rest are no text either
      }
      ++i;
      continue;
    }
    // UTF-8 passes when it is well formed and no C1 control (U+0080-U+009F: CSI is U+009B).
    const std::size_t length = byte >= 0xf0 && byte < 0xf5 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc2 && byte < 0xe0 ? 2 : 0;
    bool whole = length != 0 && i + length <= text.size();
    std::uint32_t code = length == 2 ? byte & 0x1fU : length == 3 ? byte & 0x0fU : byte & 0x07U;
    for (std::size_t k = 1; whole && k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      whole = (next & 0xc0U) == 0x80;
      code = (code << 6U) | (next & 0x3fU);
    }
    whole = whole && !(code >= 0x80 && code <= 0x9f) && !(length == 3 && code < 0x800) &&
            !(length == 4 && (code < 0x10000 || code > 0x10ffff)) && !(code >= 0xd800 && code <= 0xdfff);
    if (!whole) {
      escape(byte);
      ++i;
      continue;
    }
    out.append(text.substr(i, length));
    i += length;
  }
  return out;
}

void setup_logging(LogFormat format, const std::string& level, bool journal) {
  auto logger = std::make_shared<spdlog::logger>(
      "jetfan", std::make_shared<EventSink>(format, journal, journal && stderr_is_socket()));
  logger->flush_on(spdlog::level::trace);  // a line is written when it happens
  spdlog::set_default_logger(logger);
  set_log_level(level);
}

void set_log_level(const std::string& level) { spdlog::set_level(spdlog::level::from_str(level)); }

void write_event(spdlog::level::level_enum level, std::string_view event, LogFields fields, std::string_view message) {
  const EventContext context{event, fields};
  current_event = &context;
  spdlog::default_logger_raw()->log(level, spdlog::string_view_t(message.data(), message.size()));
  current_event = nullptr;
}

const LogField::Value* CapturedEvent::field(std::string_view key) const {
  for (const auto& [k, v] : fields) {
    if (k == key) return &v;
  }
  return nullptr;
}

struct CaptureSink final : spdlog::sinks::base_sink<std::mutex> {
  std::vector<CapturedEvent> copy() {
    std::lock_guard lock(mutex_);
    return events_;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    CapturedEvent captured{msg.level, {}, std::string(msg.payload.data(), msg.payload.size()), {}};
    if (current_event) {
      captured.event = current_event->event;
      for (const auto& field : current_event->fields) captured.fields.emplace_back(field.key, field.value);
    }
    events_.push_back(std::move(captured));
  }
  void flush_() override {}

 private:
  std::vector<CapturedEvent> events_;
};

LogCapture::LogCapture() : before_(spdlog::default_logger()), sink_(std::make_shared<CaptureSink>()) {
  auto logger = std::make_shared<spdlog::logger>("capture", sink_);
  logger->set_level(spdlog::level::trace);
  spdlog::set_default_logger(std::move(logger));
}

LogCapture::~LogCapture() { spdlog::set_default_logger(before_); }

std::vector<CapturedEvent> LogCapture::events() const { return sink_->copy(); }

std::vector<CapturedEvent> LogCapture::named(std::string_view event) const {
  std::vector<CapturedEvent> found;
  for (auto& e : events()) {
    if (e.event == event) found.push_back(std::move(e));
  }
  return found;
}

}  // namespace jetfan
