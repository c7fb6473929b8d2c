#include "server_version.hpp"

#include <charconv>

#include "json_read.hpp"

namespace jetfan::jetstream {

namespace {

bool number(std::string_view& text, int& out) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  if (error != std::errc() || end == text.data()) return false;
  text.remove_prefix(static_cast<std::size_t>(end - text.data()));
  return true;
}

bool at_least(const ServerVersion& v, int major, int minor, int patch) {
  if (v.major != major) return v.major > major;
  if (v.minor != minor) return v.minor > minor;
  return v.patch >= patch;
}

}  // namespace

std::optional<ServerVersion> parse_server_version(std::string_view text) {
  ServerVersion version;
  version.text = std::string(text);
  if (!text.empty() && text.front() == 'v') text.remove_prefix(1);
  if (!number(text, version.major) || text.empty() || text.front() != '.') return std::nullopt;
  text.remove_prefix(1);
  if (!number(text, version.minor) || text.empty() || text.front() != '.') return std::nullopt;
  text.remove_prefix(1);
  if (!number(text, version.patch)) return std::nullopt;
  if (!text.empty() && text.front() != '-' && text.front() != '+') return std::nullopt;
  return version;
}

std::optional<ServerVersion> version_in_info(std::string_view line) {
  constexpr std::string_view kInfo = "INFO ";
  if (line.substr(0, kInfo.size()) == kInfo) line.remove_prefix(kInfo.size());
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  const auto info = detail::parse(line);
  if (!info.is_object()) return std::nullopt;
  std::string text;
  if (!detail::read(info, "version", text) || text.empty()) return std::nullopt;
  return parse_server_version(text);
}

std::optional<std::string> pin_bugs(const ServerVersion& v) {
  const bool fixed = (v.major == 2 && v.minor == 12 && v.patch >= 12) ||
                     (v.major == 2 && v.minor == 14 && v.patch >= 3) || at_least(v, 2, 15, 0);
  if (fixed) return std::nullopt;
  if (!at_least(v, 2, 11, 0)) return "nats-server " + v.text + " has no priority groups (they came with 2.11)";
  return "nats-server " + v.text +
         " has known pin bugs (a crash on a pull without a group, fixed in 2.12.12 and 2.14.3; a pin kept across a "
         "consumer leader change, nats-server #7819, fixed in 2.12.5 and 2.14.0): upgrade to 2.12.12, 2.14.3 or later";
}

}  // namespace jetfan::jetstream
