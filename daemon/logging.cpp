#include "logging.hpp"

#include <sys/stat.h>
#include <systemd/sd-daemon.h>

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <ctime>

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

// The pieces of a line: [priority] [time] level message, or the same as a JSON object.
class LineFormatter final : public spdlog::formatter {
 public:
  LineFormatter(LogFormat format, bool journal) : format_(format), journal_(journal) {}

  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    if (journal_) append(dest, priority_prefix(msg.level));
    const auto level = spdlog::level::to_string_view(msg.level);
    if (format_ == LogFormat::kJson) {
      nlohmann::json line;
      if (!journal_) line["time"] = timestamp(msg.time, true);
      line["level"] = std::string_view(level.data(), level.size());
      // A message is text we made, but it can quote what a peer sent: never let that break the line.
      line["message"] = std::string_view(msg.payload.data(), msg.payload.size());
      append(dest, line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    } else {
      if (!journal_) {
        append(dest, timestamp(msg.time, false));
        dest.push_back(' ');
      }
      append(dest, std::string_view(level.data(), level.size()));
      dest.push_back(' ');
      append(dest, std::string_view(msg.payload.data(), msg.payload.size()));
    }
    dest.push_back('\n');
  }

  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<LineFormatter>(format_, journal_);
  }

 private:
  static void append(spdlog::memory_buf_t& dest, std::string_view text) {
    dest.append(text.data(), text.data() + text.size());
  }

  // Local time for people reading a terminal; UTC, marked, in JSON for machines.
  static std::string timestamp(spdlog::log_clock::time_point time, bool utc) {
    const auto since_epoch = time.time_since_epoch();
    const std::time_t seconds = std::chrono::duration_cast<std::chrono::seconds>(since_epoch).count();
    const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(since_epoch).count() % 1000;
    std::tm parts{};
    if (utc) {
      gmtime_r(&seconds, &parts);
    } else {
      localtime_r(&seconds, &parts);
    }
    char text[40];
    const std::size_t length = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &parts);
    std::snprintf(text + length, sizeof text - length, ".%03d%s", static_cast<int>(millis), utc ? "Z" : "");
    return text;
  }

  LogFormat format_;
  bool journal_;
};

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

void setup_logging(LogFormat format, const std::string& level, bool journal) {
  auto logger = std::make_shared<spdlog::logger>("jetfan", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  logger->set_formatter(std::make_unique<LineFormatter>(format, journal));
  logger->flush_on(spdlog::level::trace);  // a line is written when it happens
  spdlog::set_default_logger(logger);
  set_log_level(level);
}

void set_log_level(const std::string& level) { spdlog::set_level(spdlog::level::from_str(level)); }

}  // namespace jetfan
