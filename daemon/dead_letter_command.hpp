#pragma once
// The words of the control socket's DLQ and REDRIVE commands (daemon/CONTROL.md), read into the
// DeadLetterJob they ask for. Pure: no I/O.
//
//   DLQ HANDLER [A[-B]] [JSON]
//   REDRIVE HANDLER (ALL | A[-B]) [DRY-RUN]
//
// Keywords in any case; sequences are positive decimal numbers, A <= B.

#include <optional>
#include <string>
#include <string_view>

#include "dead_letter_jobs.hpp"

namespace jetfan {

// Reads `rest` (what follows the verb) into `job`, its kind set by `redrive`. nullopt when it is
// good; otherwise what is wrong, in words ("needs a handler name", "unexpected \"X\"", ...).
std::optional<std::string> parse_dead_letter_command(std::string_view rest, bool redrive, DeadLetterJob& job);

}  // namespace jetfan
