// libFuzzer target for the config loader and the topic matcher.
//   - load_config_text never crashes or throws, and a config it accepts has no errors;
//   - the trie matcher agrees with the reference matcher for patterns and keys taken from the input.
// Build with -DJETFAN_FUZZ=ON (clang); run with scripts/fuzz.sh.

#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "config.hpp"
#include "topic_pattern.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto result = jetfan::load_config_text(text, "fuzz.yaml");
  if (result.config.has_value() == !result.errors.empty()) std::abort();

  // Lines of the input: the first ones are patterns (those that are valid), the rest keys.
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line) && lines.size() < 40;) lines.push_back(line);
  jetfan::TopicMatcher matcher;
  std::vector<std::string> patterns;
  const std::size_t split = lines.size() / 2;
  for (std::size_t i = 0; i < split && patterns.size() < jetfan::kMaxHandlers; ++i) {
    if (jetfan::pattern_error(lines[i])) continue;
    matcher.add(lines[i], patterns.size());
    patterns.push_back(lines[i]);
  }
  for (std::size_t i = split; i < lines.size(); ++i) {
    jetfan::HandlerMask expected = 0;
    for (std::size_t p = 0; p < patterns.size(); ++p) {
      if (jetfan::topic_matches(patterns[p], lines[i])) expected |= jetfan::HandlerMask{1} << p;
    }
    if (matcher.match(lines[i]) != expected) std::abort();
  }
  return 0;
}
