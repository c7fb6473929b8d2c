#include "exec_options.hpp"

#include <charconv>

#include "duration.hpp"

namespace jetfan {

const char* exec_usage() {
  return R"(usage: jetfan exec --handler NAME (--socket PATH | --config FILE) [--concurrency N]
                   [--timeout D] [--ack-timeout D] -- CMD [ARG...]

Runs CMD (without a shell) once per message for handler NAME, up to N at once (default 1). The
payload is CMD's stdin; the rest of the message is in its environment:
  JETFAN_HANDLER       the handler's name
  JETFAN_KEY           the message's key (its subject less jetfan's prefix)
  JETFAN_SEQ           its JetStream stream sequence (the same on a redelivery)
  JETFAN_DELIVERIES    how often it has been delivered, 1 the first time
  JETFAN_HEADERS       its NATS headers, one "Name: value" per line (empty: none)
  JETFAN_HEADER_<NAME> each header's value(s), one per line; <NAME> is the header's name in upper
                       case with each character other than A-Z and 0-9 made "_"
CMD's exit status decides: 0 ACK; 100 TERM (poison), with the last line of its stderr as the
reason; anything else, or death by a signal, NAK (redelivered later). A command running longer
than --timeout D (e.g. 30s, 5m) is killed with its whole process group (SIGTERM; SIGKILL when it
has exited or 2 s later) and NAK'd. While a command runs, its delivery gets WIP every third of the
handler's ack_timeout (from --config, else --ack-timeout; neither: every second), so jetfan does
not time it out. CMD's stdout and stderr go to jetfan exec's stdout and stderr, each line prefixed
"[seq N] ".

--socket PATH is jetfan's socket; --config FILE is jetfan's config, for its socket and the
handler's ack_timeout. SIGTERM or SIGINT: no new messages; running commands finish (a second
signal kills them) and are confirmed; exit 0.
exit status: 0 stopped by a signal, 64 bad command line or CMD not found, 69 jetfan unreachable,
             76 jetfan refused the handler (ERR), 78 bad config.
)";
}

ParsedExecArgs parse_exec_args(std::span<const std::string> args) {
  ParsedExecArgs parsed;
  ExecOptions options;
  auto fail = [&](std::string why) {
    parsed.error = std::move(why);
    return parsed;
  };
  std::size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word == "--") {
      ++i;
      break;
    }
    if (word == "--help" || word == "-h") {
      parsed.help = true;
      return parsed;
    }
    const bool takes_value = word == "--handler" || word == "--socket" || word == "--config" || word == "-c" ||
                             word == "--concurrency" || word == "--timeout" || word == "--ack-timeout";
    if (!takes_value) return fail("unexpected argument \"" + word + "\" (the command goes after \"--\")");
    if (i + 1 >= args.size()) return fail(word + " needs a value");
    const std::string& value = args[++i];
    if (word == "--handler") {
      options.handler = value;
    } else if (word == "--socket") {
      options.socket = value;
    } else if (word == "--config" || word == "-c") {
      options.config = value;
    } else if (word == "--concurrency") {
      unsigned n = 0;
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc() || end != value.data() + value.size() || n < 1 || n > 4096) {
        return fail("--concurrency: \"" + value + "\" is not a whole number from 1 to 4096");
      }
      options.concurrency = n;
    } else {
      const auto duration = parse_duration(value);
      if (!duration || duration->count() == 0) {
        return fail(word + ": \"" + value + "\" is not a duration such as 500ms, 30s, 5m or 1h");
      }
      (word == "--timeout" ? options.timeout : options.ack_timeout) = *duration;
    }
  }
  options.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  if (options.handler.empty()) return fail("--handler NAME is required");
  if (options.socket.empty() == options.config.empty()) return fail("give one of --socket PATH and --config FILE");
  if (!options.config.empty() && options.ack_timeout) return fail("--ack-timeout is read from --config; give only one");
  if (options.command.empty()) return fail("no command: put it after \"--\"");
  parsed.options = std::move(options);
  return parsed;
}

}  // namespace jetfan
