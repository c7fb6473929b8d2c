#include "exec_options.hpp"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <tuple>

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
  JETFAN_SUBJECT       its full NATS subject (protocol version 2 and later)
  JETFAN_PUBLISHED     when the stream stored it, RFC 3339 in UTC with nanoseconds (version 2 on)
  JETFAN_TRACEPARENT   the W3C traceparent of jetfan's span of this delivery, the parent of the
                       command's own spans (version 3 on; unset when jetfan does not trace it)
  JETFAN_HEADERS       its NATS headers, one "Name: value" per line (empty: none)
  JETFAN_HEADER_<NAME> each header's value(s), one per line; <NAME> is the header's name in upper
                       case with each character other than A-Z and 0-9 made "_"
  JETFAN_PUBLISH_FD    3: the descriptor CMD writes publishes to, one a line (below)
CMD's exit status decides: 0 ACK; 100 TERM (poison), with the last line of its stderr as the
reason; anything else, or death by a signal, NAK (redelivered later), with the exit and the last
line of its stderr as the reason a dead letter gives. A command running longer
than --timeout D (e.g. 30s, 5m) is killed with its whole process group (SIGTERM; SIGKILL when it
has exited or 2 s later) and NAK'd. While a command runs, its delivery gets WIP every third of the
handler's ack_timeout (from --config, else --ack-timeout; neither: every second), so jetfan does
not time it out. CMD's stdout and stderr go to jetfan exec's stdout and stderr, each line prefixed
"[seq N] ".

Publishing (the handler's publish.subjects in jetfan's config, protocol version 3): each line CMD
writes to descriptor 3 ($JETFAN_PUBLISH_FD; stdout is its log), "<subject> <payload>", publishes
the payload (every byte after the first space, to the line end; "<subject>" alone: empty) to the
subject through jetfan, as it is written: echo "builds.done $id" >&"$JETFAN_PUBLISH_FD". Each is
tied to the message, as the line's number less one, so a redelivery's lines are duplicates the
stream drops. After exit 0 jetfan exec waits for them to be stored, then ACKs; one that is not
(logged with its line) NAKs the message. A line that is not a publish (empty, no subject, longer
than 1 MiB + 4 KiB) is logged and NAKs the message, and nothing after it is published. A payload
is one line of text: for headers or binary payloads, use a client library.

--socket PATH is jetfan's socket; --config FILE is jetfan's config, for its socket and the
handler's ack_timeout. SIGTERM or SIGINT: no new messages; running commands finish (a second
signal kills them) and are confirmed; exit 0.
Each flag takes "--flag VALUE" or "--flag=VALUE".
exit status: 0 stopped by a signal, 64 bad command line, 69 jetfan unreachable, 76 jetfan refused
             the handler (ERR), 78 bad config, 126 CMD cannot be run, 127 CMD not found (as shells do).
)";
}

void declare_exec_flags(CLI::App& app, ExecFlags& flags) {
  app.add_option("--handler", flags.handler, "the handler's name (required)")->type_name("NAME");
  app.add_option("--socket", flags.socket, "jetfan's socket")->type_name("PATH");
  app.add_option("-c,--config", flags.config, "jetfan's config, for its socket and the handler's ack_timeout")
      ->type_name("FILE");
  app.add_option("--concurrency", flags.concurrency, "how many commands may run at once, 1 to 4096 (default 1)")
      ->type_name("N");
  app.add_option("--timeout", flags.timeout, "kill a command running longer, e.g. 30s or 5m (default: none)")
      ->type_name("D");
  app.add_option("--ack-timeout", flags.ack_timeout, "the handler's ack_timeout, without --config")->type_name("D");
}

ParsedExecArgs parse_exec_args(std::span<const std::string> args) {
  ParsedExecArgs parsed;
  auto fail = [&](std::string why) {
    parsed.error = std::move(why);
    return parsed;
  };
  const auto separator = std::find(args.begin(), args.end(), std::string("--"));
  ExecFlags flags;
  CLI::App app("", "jetfan exec");
  app.set_help_flag("-h,--help");
  app.allow_extras();  // named below, with where the command goes
  declare_exec_flags(app, flags);
  std::vector<std::string> reversed(std::make_reverse_iterator(separator), std::make_reverse_iterator(args.begin()));
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    parsed.help = true;
    return parsed;
  } catch (const CLI::ParseError& e) {
    return fail(e.what());
  }
  if (const auto extra = app.remaining(); !extra.empty()) {
    return fail("unexpected argument \"" + extra.front() + "\" (the command goes after \"--\")");
  }

  ExecOptions options;
  options.handler = flags.handler;
  options.socket = flags.socket;
  options.config = flags.config;
  if (!flags.concurrency.empty()) {
    const std::string& value = flags.concurrency;
    unsigned n = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (ec != std::errc() || end != value.data() + value.size() || n < 1 || n > 4096) {
      return fail("--concurrency: \"" + value + "\" is not a whole number from 1 to 4096");
    }
    options.concurrency = n;
  }
  for (auto [flag, value, out] : {std::tuple{"--timeout", &flags.timeout, &options.timeout},
                                  std::tuple{"--ack-timeout", &flags.ack_timeout, &options.ack_timeout}}) {
    if (value->empty()) continue;
    const auto duration = parse_duration(*value);
    if (!duration) {
      return fail(std::string(flag) + ": \"" + *value + "\" is not a duration (" +
                  duration_refusal(*value).value_or("unreadable") + "), e.g. 500ms, 1.5s, 1m30s");
    }
    if (duration->count() == 0) return fail(std::string(flag) + ": must be longer than 0");
    *out = *duration;
  }
  if (separator != args.end()) options.command.assign(separator + 1, args.end());
  if (options.handler.empty()) return fail("--handler NAME is required");
  if (options.socket.empty() == options.config.empty()) return fail("give one of --socket PATH and --config FILE");
  if (!options.config.empty() && options.ack_timeout) return fail("--ack-timeout is read from --config; give only one");
  if (options.command.empty()) return fail("no command: put it after \"--\"");
  parsed.options = std::move(options);
  return parsed;
}

}  // namespace jetfan
