#pragma once
// The effective config: a loaded Config written back as YAML, every key with the value jetfan runs
// with, defaults included (`jetfan check --print`). Secrets are never written: a token or password
// given in the file is shown as "<hidden>". Keys whose default is decided only when jetfan binds
// (consumer.ack_policy, max_held, batch) are left out with a comment saying so. What it writes
// loads again to the same config (config/effective_config_test.cpp holds it to every key). Pure.

#include <string>

#include "config.hpp"

namespace jetfan {

// Durations as the config accepts them and NATS writes them: "250ms", "30s", "1m30s", "1.5s".
std::string format_duration(Duration duration);
// Sizes: "4096", or with the largest binary unit that divides them exactly ("64MiB").
std::string format_byte_size(std::uint64_t bytes);

std::string effective_config_yaml(const Config& config);

}  // namespace jetfan
