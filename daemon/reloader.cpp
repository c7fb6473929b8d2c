#include "reloader.hpp"

#include <spdlog/spdlog.h>

#include "dispatcher.hpp"
#include "logging.hpp"
#include "reload_plan.hpp"
#include "serve_settings.hpp"

namespace jetfan {

Reloader::Reloader(Config& config, ConsumerFacts facts, Dispatcher& dispatcher, bool log_level_pinned)
    : config_(config), facts_(std::move(facts)), dispatcher_(dispatcher), log_level_pinned_(log_level_pinned) {}

ReloadResult Reloader::refuse(std::vector<std::string> lines) {
  for (const auto& line : lines) log_error("reload.refused", {{"file", config_.file}}, "reload: {}", line);
  return ReloadResult{false, std::move(lines)};
}

ReloadResult Reloader::reload() {
  const std::string file = config_.file;
  auto loaded = load_config_file(file);
  if (!loaded.config) {
    std::vector<std::string> lines{"refused: " + file + " has " + std::to_string(loaded.errors.size()) +
                                   " error(s); the running config stays in force"};
    lines.insert(lines.end(), loaded.errors.begin(), loaded.errors.end());
    return refuse(std::move(lines));
  }
  if (!dispatcher_.serving()) return refuse({"refused: jetfan is stopping; the running config stays in force"});
  const ReloadPlan plan = plan_reload(config_, *loaded.config);
  if (!plan.refused.empty()) {
    std::string keys;
    for (const auto& key : plan.refused) keys += (keys.empty() ? "" : ", ") + key;
    return refuse({"refused: " + file + " changes " + keys +
                   ", which only a restart of jetfan can change; the running "
                   "config stays in force (change those back, or restart jetfan)"});
  }
  ServeSettingsResult derived = derive_serve_settings(*loaded.config, facts_);
  if (!derived.settings) return refuse({"refused: " + derived.error + "; the running config stays in force"});
  if (plan.changes.empty()) {
    log_info("reload.unchanged", {{"file", file}}, "reload: {} has no change", file);
    return ReloadResult{true, {"reloaded " + file + ": no change"}};
  }

  const std::uint64_t boundary = dispatcher_.last_arrived_seq();
  const std::string old_level = config_.log_level;
  config_ = std::move(*loaded.config);
  std::vector<std::string> lines{"reloaded " + file};
  for (const auto& change : plan.changes) lines.push_back(change);
  for (auto& line : dispatcher_.apply_reload(plan, std::move(*derived.settings))) lines.push_back(std::move(line));
  lines.push_back("routing by the new config from the next arrival on; the last arrival before it: stream seq " +
                  std::to_string(boundary));
  if (config_.log_level != old_level) {
    if (log_level_pinned_) {
      lines.push_back("log.level stays as --log-level set it at start");
    } else {
      set_log_level(config_.log_level);
    }
  }
  for (const auto& line : lines) log_info("reload.applied", {{"file", file}}, "reload: {}", line);
  return ReloadResult{true, std::move(lines)};
}

}  // namespace jetfan
