#include "dlq_commands.hpp"

#include <nlohmann/json.hpp>

#include "control_client.hpp"
#include "startup_error.hpp"

namespace jetfan {

std::string dead_letter_command_line(const DeadLetterArguments& args) {
  std::string line = (args.list ? "DLQ " : "REDRIVE ") + args.handler;
  if (args.all) line += " ALL";
  if (!args.seq.empty()) line += " " + args.seq;
  if (args.json) line += " JSON";
  if (args.dry_run) line += " DRY-RUN";
  return line;
}

int run_dead_letter_command(const std::string& control_path, const DeadLetterArguments& args) {
  std::string last;
  const int status = control_command(control_path, dead_letter_command_line(args), last);
  if (status != kExitOk) return status;
  if (last.rfind("ERR", 0) == 0) return kExitUsage;
  if (args.json) {
    const auto doc = nlohmann::json::parse(last, nullptr, false);
    return doc.is_object() && doc.value("complete", false) ? kExitOk : 1;
  }
  return last.rfind("OK", 0) == 0 ? kExitOk : 1;
}

}  // namespace jetfan
