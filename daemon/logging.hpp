#pragma once
// Logging: one line per event on stderr, which journald picks up under systemd.
//
//   text  "2026-11-29T20:00:57.123 warning <message>"
//   json  {"time":"2026-11-29T20:00:57.123Z","level":"warning","message":"<message>"}  (one per line)
// When stderr is the journal (systemd sets JOURNAL_STREAM to its device and inode), lines carry no
// timestamp of their own (journald has it) and start with a syslog priority, "<4>" for a warning
// (sd-daemon.h's SD_WARNING), so `journalctl -p warning` selects them.
//
// Thread: setup before any other thread logs; spdlog itself is thread-safe.

#include <string>

#include "config.hpp"

namespace jetfan {

// True when stderr is the stream systemd connected to the journal.
bool stderr_is_journal();

// Installs the default logger (stderr, unbuffered lines) with the given format and level.
void setup_logging(LogFormat format, const std::string& level, bool journal);
// Changes the level of the installed logger (reload, --log-level).
void set_log_level(const std::string& level);

}  // namespace jetfan
