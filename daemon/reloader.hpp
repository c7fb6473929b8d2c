#pragma once
// Reloader: SIGHUP and `jetfan reload`. Reads the config file again, asks plan_reload
// (config/reload_plan.hpp) what may change, and either applies it to the running Dispatcher or
// refuses it as a whole, logging why with the keys named. A file that does not parse is refused
// the same way. Either way the log says what happened, and the result says it to the caller.
//
// Thread: the io_context thread. `config` is the daemon's, which the dispatcher refers to; a reload
// replaces it in place.

#include <string>
#include <vector>

#include "config.hpp"
#include "consumer_facts.hpp"

namespace jetfan {

class Dispatcher;

struct ReloadResult {
  bool applied = false;
  std::vector<std::string> lines;  // the first says what happened; the rest are details
};

class Reloader {
 public:
  // `log_level_pinned`: --log-level was given at start, and wins over log.level on reload too.
  Reloader(Config& config, ConsumerFacts facts, Dispatcher& dispatcher, bool log_level_pinned);
  ReloadResult reload();

 private:
  ReloadResult refuse(std::vector<std::string> lines);

  Config& config_;
  ConsumerFacts facts_;
  Dispatcher& dispatcher_;
  bool log_level_pinned_;
};

}  // namespace jetfan
