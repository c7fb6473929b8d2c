#include "config.hpp"
#include "config_keys.hpp"

#include <yaml-cpp/yaml.h>

#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <span>
#include <sstream>
#include <variant>

#include "accounts.hpp"
#include "byte_size.hpp"
#include "encoder.hpp"
#include "ledger_record.hpp"
#include "nats_subject.hpp"
#include "protocol.hpp"
#include "topic_pattern.hpp"

namespace jetfan {

const char* to_string(WhenFull when_full) { return when_full == WhenFull::kHandBack ? "hand_back" : "hold"; }

std::string to_string(const OrderBy& order_by) {
  switch (order_by.kind) {
    case OrderBy::Kind::kNone:
      return "none";
    case OrderBy::Kind::kKey:
      return "key";
    case OrderBy::Kind::kToken:
      return "token:" + std::to_string(order_by.token);
    case OrderBy::Kind::kHeader:
      return "header:" + order_by.header;
  }
  return "?";
}

std::optional<OrderBy> parse_order_by(const std::string& text) {
  OrderBy out;
  if (text == "key") {
    out.kind = OrderBy::Kind::kKey;
    return out;
  }
  if (text.starts_with("token:")) {
    const std::string digits = text.substr(6);
    if (digits.empty() || digits.size() > 3 || digits.find_first_not_of("0123456789") != std::string::npos) {
      return std::nullopt;
    }
    out.kind = OrderBy::Kind::kToken;
    out.token = static_cast<std::size_t>(std::stoul(digits));
    if (out.token == 0) return std::nullopt;
    return out;
  }
  if (text.starts_with("header:")) {
    out.kind = OrderBy::Kind::kHeader;
    out.header = text.substr(7);
    // A NATS header name is printable ASCII without ':' or space (it ends at the ':' on the wire).
    if (out.header.empty() || out.header.size() > 256) return std::nullopt;
    for (const char c : out.header) {
      if (c <= ' ' || c > '~' || c == ':') return std::nullopt;
    }
    return out;
  }
  return std::nullopt;
}

namespace {

// An authority's host and port: host, [v6 host] or either with :port. An error when the brackets
// are wrong or the port is not from 1 to 65535.
struct HostPort {
  std::string host;
  std::string port;  // empty: none given
};
std::variant<HostPort, std::string> split_host_port(const std::string& authority) {
  HostPort out{authority, {}};
  bool has_port = false;
  if (!authority.empty() && authority[0] == '[') {
    const auto close = authority.find(']');
    if (close == std::string::npos) return std::string("has an unclosed '[' in its host");
    out.host = authority.substr(1, close - 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') return std::string("has something other than :port after its host");
      out.port = authority.substr(close + 2);
      has_port = true;
    }
  } else if (const auto colon = authority.rfind(':'); colon != std::string::npos) {
    out.host = authority.substr(0, colon);
    out.port = authority.substr(colon + 1);
    has_port = true;
  }
  if (has_port) {
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(out.port.data(), out.port.data() + out.port.size(), value);
    if (out.port.empty() || ec != std::errc() || end != out.port.data() + out.port.size() || value == 0 ||
        value > 65535) {
      return "has port \"" + out.port + "\"; it must be a number from 1 to 65535";
    }
  }
  return out;
}

// nullopt when `url` is a server URL cnats takes: nats://, tls://, ws:// or wss://, then
// [user[:password]@]host[:port], host a name or an address ([...] for IPv6).
std::optional<std::string> server_url_error(const std::string& url) {
  const auto scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return "needs a scheme: nats://host:port (or tls://, ws://, wss://)";
  const std::string scheme = url.substr(0, scheme_end);
  if (scheme != "nats" && scheme != "tls" && scheme != "ws" && scheme != "wss") {
    return "has scheme \"" + scheme + "\"; it must be nats, tls, ws or wss";
  }
  std::string rest = url.substr(scheme_end + 3);
  if (const auto at = rest.rfind('@'); at != std::string::npos) rest = rest.substr(at + 1);
  if (rest.empty()) return "names no host";
  const auto split = split_host_port(rest);
  if (const auto* error = std::get_if<std::string>(&split)) return *error;
  const std::string& host = std::get<HostPort>(split).host;
  if (host.empty() || host.find_first_of(" /?#") != std::string::npos) return "has no valid host";
  if (rest.find('/') != std::string::npos && rest[0] != '[') return "has a path; give only host and port";
  return std::nullopt;
}

// nullopt when `url` is an endpoint tracing can send to: http://host[:port][/path][?query], host a
// name or an address ([...] for IPv6), no user info. TLS is the job of a collector beside jetfan.
std::optional<std::string> tracing_endpoint_error(const std::string& url) {
  if (url.starts_with("https://")) {
    return "uses https://, but jetfan does not speak TLS to a collector: send to a local OpenTelemetry "
           "Collector over http:// (it can forward with TLS)";
  }
  if (!url.starts_with("http://")) return "must start with http:// (e.g. http://127.0.0.1:4318/v1/traces)";
  for (const char c : url) {
    if (c <= ' ' || c == 0x7f) return "contains white space or a control character";
  }
  const std::string rest = url.substr(7);
  const std::string authority = rest.substr(0, rest.find_first_of("/?#"));
  if (authority.find('@') != std::string::npos) {
    return "has user info (user@host); give only host[:port], jetfan sends the collector no credentials";
  }
  if (authority.empty() || authority[0] != '[') {
    if (const auto colon = authority.find(':');
        colon != std::string::npos && authority.find(':', colon + 1) != std::string::npos) {
      return "has an IPv6 address not in brackets: http://[::1]:4318";
    }
  }
  const auto split = split_host_port(authority);
  if (const auto* error = std::get_if<std::string>(&split)) return *error;
  if (std::get<HostPort>(split).host.empty()) return "names no host";
  return std::nullopt;
}

// Walks the YAML tree, filling a Config and collecting every error with its line and key path.
class ConfigReader {
 public:
  ConfigReader(std::string file, std::vector<std::string>& errors) : file_(std::move(file)), errors_(errors) {}

  // "FILE:LINE: KEY", as an error about `at` starts.
  std::string where(const YAML::Node& at, const std::string& key) const {
    // An absent key's node has no position (and Mark() would throw); -1 for nodes not from the text.
    const int line = at.IsDefined() ? at.Mark().line : -1;
    return file_ + ":" + (line >= 0 ? std::to_string(line + 1) : std::string("?")) + ": " + key;
  }

  void error(const YAML::Node& at, const std::string& key, const std::string& message) {
    errors_.push_back(where(at, key) + ": " + message);
  }

  // Reports keys of `map` not listed in `known`; a typo must never be silently ignored.
  bool check_map(const YAML::Node& map, const std::string& path, std::span<const char* const> known) {
    if (!map.IsMap()) {
      error(map, path, "expected a mapping of keys to values");
      return false;
    }
    std::map<std::string, int> seen;  // key -> its line
    for (const auto& entry : map) {
      const auto name = entry.first.Scalar();
      const int line = entry.first.Mark().line + 1;
      if (const auto [first, fresh] = seen.emplace(name, line); !fresh) {
        // yaml-cpp would silently use the first; a second block is never what was meant.
        error(entry.first, join(path, name),
              "is given twice, on lines " + std::to_string(first->second) + " and " + std::to_string(line));
        continue;
      }
      bool found = false;
      for (const char* k : known) found = found || name == k;
      if (!found) {
        std::string list;
        for (const char* k : known) list += (list.empty() ? "" : ", ") + std::string(k);
        error(entry.first, join(path, name), "unknown key (expected one of: " + list + ")");
      }
    }
    return true;
  }

  // The node of `key` in `map` if it is there, else the map itself: where an error about it points.
  static YAML::Node either(const YAML::Node& map, const char* key) {
    const YAML::Node child = map[key];
    return child.IsDefined() ? child : map;
  }

  static std::string join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }

  std::optional<std::string> string(const YAML::Node& node, const std::string& path) {
    if (!node.IsScalar()) {
      error(node, path, "expected a single value");
      return std::nullopt;
    }
    return node.Scalar();
  }

  void read_string(const YAML::Node& parent, const std::string& path, const char* key, std::string& out,
                   bool required = false) {
    const auto node = parent[key];
    if (!node) {
      if (required) error(parent, join(path, key), "is required");
      return;
    }
    if (auto text = string(node, join(path, key))) {
      if (required && text->empty()) error(node, join(path, key), "cannot be empty");
      out = *text;
    }
  }

  void read_duration(const YAML::Node& parent, const std::string& path, const char* key, Duration& out) {
    const auto node = parent[key];
    if (!node) return;
    const auto text = string(node, join(path, key));
    if (!text) return;
    if (auto parsed = parse_duration(*text)) {
      out = *parsed;
    } else {
      error(node, join(path, key),
            "\"" + *text + "\" is not a duration (" + duration_refusal(*text).value_or("unreadable") +
                "); e.g. 250ms, 1.5s, 1m30s, 2h45m");
    }
  }

  template <typename Int>
  void read_int(const YAML::Node& parent, const std::string& path, const char* key, Int& out, long long min,
                long long max) {
    const auto node = parent[key];
    if (!node) return;
    const auto text = string(node, join(path, key));
    if (!text) return;
    long long value = 0;
    const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
    if (ec != std::errc() || end != text->data() + text->size() || value < min || value > max) {
      error(node, join(path, key),
            "\"" + *text + "\" must be a whole number from " + std::to_string(min) + " to " + std::to_string(max));
      return;
    }
    out = static_cast<Int>(value);
  }

  void read_bool(const YAML::Node& parent, const std::string& path, const char* key, bool& out) {
    const auto node = parent[key];
    if (!node) return;
    const auto text = string(node, join(path, key));
    if (!text) return;
    if (*text == "true" || *text == "false") {
      out = *text == "true";
    } else {
      error(node, join(path, key), "\"" + *text + "\" must be true or false");
    }
  }

  // A rate in messages a second: from 0.001 (one each 1000 s) to a million; fractions too (0.5 is one
  // each 2 s).
  void read_rate(const YAML::Node& parent, const std::string& path, const char* key, double& out) {
    const auto node = parent[key];
    if (!node) return;
    const auto text = string(node, join(path, key));
    if (!text) return;
    double value = 0;
    const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
    if (ec != std::errc() || end != text->data() + text->size() || !(value >= 0.001) || value > 1'000'000) {
      error(node, join(path, key),
            "\"" + *text + "\" must be a number of messages a second from 0.001 to 1000000 (e.g. 50, 0.5)");
      return;
    }
    out = value;
  }

  std::vector<std::string> read_string_list(const YAML::Node& node, const std::string& path) {
    std::vector<std::string> out;
    if (node.IsScalar()) {
      out.push_back(node.Scalar());
    } else if (node.IsSequence()) {
      for (std::size_t i = 0; i < node.size(); ++i) {
        if (auto text = string(node[i], path + "[" + std::to_string(i) + "]")) out.push_back(*text);
      }
    } else {
      error(node, path, "expected a list of strings");
    }
    return out;
  }

  void read_nats(const YAML::Node& node, NatsSettings& nats) {
    if (!node) return;
    if (!check_map(node, "nats", config_keys::kNats)) {
      return;
    }
    if (node["servers"]) {
      nats.servers = read_string_list(node["servers"], "nats.servers");
      if (nats.servers.empty()) error(node["servers"], "nats.servers", "needs at least one server URL");
      for (std::size_t i = 0; i < nats.servers.size(); ++i) {
        if (auto why = server_url_error(nats.servers[i])) {
          const auto at = node["servers"].IsSequence() ? node["servers"][i] : node["servers"];
          error(at, "nats.servers[" + std::to_string(i) + "]", "\"" + nats.servers[i] + "\" " + *why);
        }
      }
    }
    read_string(node, "nats", "name", nats.name);
    read_string(node, "nats", "creds", nats.creds);
    read_string(node, "nats", "nkey_seed", nats.nkey_seed);
    read_string(node, "nats", "nkey", nats.nkey);
    read_string(node, "nats", "token", nats.token);
    read_string(node, "nats", "token_file", nats.token_file);
    read_string(node, "nats", "user", nats.user);
    read_string(node, "nats", "password", nats.password);
    read_string(node, "nats", "password_file", nats.password_file);
    read_duration(node, "nats", "connect_timeout", nats.connect_timeout);
    read_duration(node, "nats", "reconnect_wait", nats.reconnect_wait);
    read_duration(node, "nats", "retry_max", nats.retry_max);
    const bool token = !nats.token.empty() || !nats.token_file.empty();
    const bool password = !nats.password.empty() || !nats.password_file.empty();
    const int ways = !nats.creds.empty() + !nats.nkey_seed.empty() + token + !nats.user.empty();
    if (ways > 1) error(node, "nats", "give only one of creds, nkey_seed, token (or token_file) or user+password");
    if (!nats.token.empty() && !nats.token_file.empty())
      error(either(node, "token_file"), "nats.token_file", "give either token or token_file, not both");
    if (!nats.password.empty() && !nats.password_file.empty())
      error(either(node, "password_file"), "nats.password_file", "give either password or password_file, not both");
    if (nats.nkey.empty() != nats.nkey_seed.empty())
      error(node, "nats.nkey", "nkey (the public key) and nkey_seed (its seed file) go together");
    if (!nats.user.empty() && !password)
      error(node, "nats.password", "is required with nats.user (or nats.password_file)");
    if (nats.user.empty() && password)
      error(either(node, nats.password.empty() ? "password_file" : "password"), "nats.user",
            nats.password.empty() ? "is required with nats.password_file" : "is required with nats.password");
    if (const auto tls = node["tls"]) {
      if (check_map(tls, "nats.tls", config_keys::kNatsTls)) {
        TlsSettings settings;
        read_string(tls, "nats.tls", "ca", settings.ca);
        read_string(tls, "nats.tls", "cert", settings.cert);
        read_string(tls, "nats.tls", "key", settings.key);
        if (settings.cert.empty() != settings.key.empty()) {
          error(tls, "nats.tls", "cert and key go together: give both or neither");
        }
        nats.tls = settings;
      }
    }
  }

  void check_name(const YAML::Node& parent, const std::string& path, const std::string& name) {
    if (name.find_first_of(" \t\r\n.*>") != std::string::npos) {
      error(parent, path, "\"" + name + "\" cannot contain white space, '.', '*' or '>'");
    }
  }

  void read_consumer(const YAML::Node& node, ConsumerSettings& consumer) {
    if (!node) {
      errors_.push_back(file_ + ":1: consumer: is required (with stream and durable)");
      return;
    }
    if (!check_map(node, "consumer", config_keys::kConsumer)) {
      return;
    }
    read_string(node, "consumer", "stream", consumer.stream, true);
    read_string(node, "consumer", "durable", consumer.durable, true);
    check_name(either(node, "stream"), "consumer.stream", consumer.stream);
    check_name(either(node, "durable"), "consumer.durable", consumer.durable);
    if (const auto policy = node["ack_policy"]) {
      if (const auto text = string(policy, "consumer.ack_policy")) {
        if (*text == "explicit")
          consumer.ack_policy = AckPolicy::kExplicit;
        else if (*text == "all")
          consumer.ack_policy = AckPolicy::kAll;
        else if (*text == "none")
          consumer.ack_policy = AckPolicy::kNone;
        else
          error(policy, "consumer.ack_policy", "\"" + *text + "\" must be explicit, all or none");
      }
    }
    if (const auto action = node["on_other_reader"]) {
      if (const auto text = string(action, "consumer.on_other_reader")) {
        if (*text == "warn")
          consumer.on_other_reader = OtherReaderAction::kWarn;
        else if (*text == "exit")
          consumer.on_other_reader = OtherReaderAction::kExit;
        else
          error(action, "consumer.on_other_reader", "\"" + *text + "\" must be warn or exit");
      }
    }
    if (node["max_held"]) {
      std::int64_t max_held = 0;
      read_int(node, "consumer", "max_held", max_held, 1, 10'000'000);
      if (max_held > 0) consumer.max_held = max_held;
    }
    if (node["batch"]) {
      int batch = 0;
      read_int(node, "consumer", "batch", batch, 1, 10'000);
      if (batch > 0) consumer.batch = batch;
    }
    if (const auto bytes = node["max_held_bytes"]; bytes && bytes.IsScalar() && bytes.Scalar() == "0") {
      consumer.max_held_bytes = 0;
    } else {
      read_size(node, "consumer", "max_held_bytes", consumer.max_held_bytes, 64 * 1024);
    }
    read_duration(node, "consumer", "pull_expires", consumer.pull_expires);
    read_duration(node, "consumer", "idle_heartbeat", consumer.idle_heartbeat);
    if (consumer.pull_expires < Duration(1000)) {
      error(either(node, "pull_expires"), "consumer.pull_expires", "must be at least 1s");
    }
    if (consumer.idle_heartbeat * 2 > consumer.pull_expires || consumer.idle_heartbeat < Duration(100)) {
      error(either(node, "idle_heartbeat"), "consumer.idle_heartbeat",
            "must be at least 100ms and at most half of consumer.pull_expires");
    }
  }

  void read_socket(const YAML::Node& node, SocketSettings& socket) {
    if (!node) {
      errors_.push_back(file_ + ":1: socket: is required (with path)");
      return;
    }
    if (!check_map(node, "socket", config_keys::kSocket)) {
      return;
    }
    read_string(node, "socket", "path", socket.path, true);
    if (!socket.path.empty() && socket.path[0] != '/') {
      error(either(node, "path"), "socket.path", "\"" + socket.path + "\" must be an absolute path");
    }
    // sizeof(sockaddr_un::sun_path) is 108; jetfan first binds the socket in a private directory
    // beside it ("<dir>/.jf-XXXXXX/s"), which must fit too.
    const std::size_t directory = socket.path.rfind('/') == std::string::npos ? 0 : socket.path.rfind('/');
    if (socket.path.size() >= 108 || directory + 13 >= 108) {
      error(either(node, "path"), "socket.path",
            "is too long: a Unix socket path may have 107 bytes, and its directory at most 94");
    }
    if (const auto mode = node["mode"]) {
      if (const auto text = string(mode, "socket.mode")) {
        unsigned value = 0;
        const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value, 8);
        if (ec != std::errc() || end != text->data() + text->size() || value > 0777) {
          error(mode, "socket.mode", "\"" + *text + "\" must be an octal file mode such as \"0660\"");
        } else if ((value & 0600) != 0600) {
          error(mode, "socket.mode", "\"" + *text + "\" locks out the socket's owner; it needs at least 0600");
        } else {
          socket.mode = static_cast<mode_t>(value);
        }
      }
    }
    if (const auto owner = node["owner"]) {
      if (const auto text = string(owner, "socket.owner"))
        socket.owner_name = AccountName{*text, where(owner, "socket.owner")};
    }
    if (const auto group = node["group"]) {
      if (const auto text = string(group, "socket.group"))
        socket.group_name = AccountName{*text, where(group, "socket.group")};
    }
    read_duration(node, "socket", "hello_timeout", socket.hello_timeout);
    read_int(node, "socket", "max_connections", socket.max_connections, 1, 1'000'000);
    read_int(node, "socket", "max_unidentified", socket.max_unidentified, 1, 1'000'000);
    read_size(node, "socket", "max_output_buffer", socket.max_output_buffer, 4096);
    read_duration(node, "socket", "idle_timeout", socket.idle_timeout);
    read_duration(node, "socket", "ping_timeout", socket.ping_timeout);
  }

  void read_size(const YAML::Node& parent, const std::string& path, const char* key, std::uint64_t& out,
                 std::uint64_t min) {
    const auto node = parent[key];
    if (!node) return;
    const auto text = string(node, join(path, key));
    if (!text) return;
    const auto parsed = parse_byte_size(*text);
    if (!parsed || *parsed < min) {
      error(node, join(path, key),
            "\"" + *text + "\" must be a size of at least " + std::to_string(min) +
                " bytes, in bytes or with a unit: KiB, MiB, GiB (KB, MB, GB too: powers of 1024, as in "
                "nats-server) or K, M, G (powers of 1000), e.g. 64MiB");
      return;
    }
    out = *parsed;
  }

  void read_allow(const YAML::Node& node, const std::string& path, AllowSettings& allow) {
    if (!check_map(node, path, config_keys::kAllow)) return;
    auto each = [&](const char* key, auto resolve) {
      const auto list = node[key];
      if (!list) return;
      const auto names = read_string_list(list, join(path, key));
      for (std::size_t i = 0; i < names.size(); ++i) {
        resolve(list.IsSequence() ? list[i] : list, join(path, key) + "[" + std::to_string(i) + "]", names[i]);
      }
    };
    auto number = [&](const YAML::Node& at, const std::string& where,
                      const std::string& text) -> std::optional<std::uint32_t> {
      std::uint32_t value = 0;
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (ec == std::errc() && end == text.data() + text.size() && !text.empty()) return value;
      error(at, where, "\"" + text + "\" is not a number");
      return std::nullopt;
    };
    each("users", [&](const YAML::Node& at, const std::string& key, const std::string& name) {
      allow.users.push_back(AccountName{name, where(at, key)});
    });
    each("uids", [&](const YAML::Node& at, const std::string& where, const std::string& text) {
      if (auto id = number(at, where, text)) allow.uids.push_back(*id);
    });
    each("groups", [&](const YAML::Node& at, const std::string& key, const std::string& name) {
      allow.groups.push_back(AccountName{name, where(at, key)});
    });
    each("gids", [&](const YAML::Node& at, const std::string& where, const std::string& text) {
      if (auto id = number(at, where, text)) allow.gids.push_back(*id);
    });
    if (allow.empty()) error(node, path, "lists no one: give users, groups, uids or gids, or leave allow out");
  }

  // An octal file mode such as "0660".
  void read_mode(const YAML::Node& parent, const std::string& path, mode_t& out) {
    const auto node = parent["mode"];
    if (!node) return;
    const auto text = string(node, join(path, "mode"));
    if (!text) return;
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value, 8);
    if (ec != std::errc() || end != text->data() + text->size() || value > 0777) {
      error(node, join(path, "mode"), "\"" + *text + "\" must be an octal file mode such as \"0660\"");
    } else {
      out = static_cast<mode_t>(value);
    }
  }

  void read_control(const YAML::Node& node, const SocketSettings& socket, ControlSettings& control) {
    if (node && check_map(node, "control", config_keys::kControl)) {
      read_string(node, "control", "path", control.path);
      read_mode(node, "control", control.mode);
      if (const auto allow = node["allow"]) read_allow(allow, "control.allow", control.allow);
      if (const auto allow = node["allow_read"]) read_allow(allow, "control.allow_read", control.allow_read);
      // Whoever may write the socket may connect; without an allow list, connecting is all it takes
      // to pause, redrive or reload.
      if ((control.mode & S_IWOTH) && control.allow.empty() && control.allow_read.empty()) {
        char mode[16];
        std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(control.mode));
        error(either(node, "mode"), "control.mode",
              std::string("\"") + mode +
                  "\" lets every local user connect, and then pause, redrive or reload: use \"0660\" with a "
                  "group, or say who may with control.allow (and control.allow_read)");
      }
    }
    if (control.path.empty() && !socket.path.empty()) {
      const std::string_view sock = ".sock";
      control.path = socket.path;
      if (control.path.size() > sock.size() && control.path.ends_with(sock))
        control.path.resize(control.path.size() - sock.size());
      control.path += ".ctl";
    }
    if (control.path.size() >= 108) {
      error(node ? either(node, "path") : node, "control.path",
            "\"" + control.path + "\" is longer than the 107 bytes a Unix socket path may have");
    }
    if (!control.path.empty() && control.path == socket.path) {
      error(node ? either(node, "path") : node, "control.path",
            "must differ from socket.path: handlers must not reach control commands");
    }
  }

  // "HOST:PORT", "[V6]:PORT" or "PORT" alone (loopback).
  void read_metrics(const YAML::Node& node, std::optional<MetricsSettings>& metrics) {
    if (!node) return;
    if (!check_map(node, "metrics", config_keys::kMetrics)) return;
    std::string listen;
    read_string(node, "metrics", "listen", listen, true);
    if (listen.empty()) return;
    MetricsSettings settings;
    std::string port = listen;
    if (const auto colon = listen.rfind(':'); colon != std::string::npos) {
      settings.host = listen.substr(0, colon);
      port = listen.substr(colon + 1);
      if (settings.host.size() >= 2 && settings.host.front() == '[' && settings.host.back() == ']') {
        settings.host = settings.host.substr(1, settings.host.size() - 2);
      }
    }
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (settings.host.empty() || port.empty() || ec != std::errc() || end != port.data() + port.size() ||
        value > 65535) {
      error(either(node, "listen"), "metrics.listen",
            "\"" + listen + "\" must be HOST:PORT (an IP address and a port, e.g. 127.0.0.1:9464) or a port alone");
      return;
    }
    settings.port = static_cast<std::uint16_t>(value);
    read_int(node, "metrics", "max_connections", settings.max_connections, 1, 4096);
    metrics = settings;
  }

  // A duration key between `min` and `max`, as written in the message.
  void read_duration_within(const YAML::Node& parent, const std::string& path, const char* key, Duration& out,
                            Duration min, Duration max, const char* range) {
    Duration value = out;
    read_duration(parent, path, key, value);
    if (value < min || value > max) {
      error(parent[key], join(path, key), "\"" + parent[key].Scalar() + "\" must be from " + range);
      return;
    }
    out = value;
  }

  // Off unless given; every key but endpoint has a default.
  void read_tracing(const YAML::Node& node, std::optional<TracingSettings>& tracing) {
    if (!node) return;
    if (!check_map(node, "tracing", config_keys::kTracing)) return;
    TracingSettings settings;
    read_string(node, "tracing", "endpoint", settings.endpoint, true);
    if (!settings.endpoint.empty()) {
      if (auto why = tracing_endpoint_error(settings.endpoint)) {
        error(node["endpoint"], "tracing.endpoint", "\"" + settings.endpoint + "\" " + *why);
      }
    }
    if (const auto ratio = node["sample_ratio"]) {
      if (const auto text = string(ratio, "tracing.sample_ratio")) {
        double value = -1;
        const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
        if (text->empty() || ec != std::errc() || end != text->data() + text->size() || !(value >= 0) || value > 1) {
          error(ratio, "tracing.sample_ratio",
                "\"" + *text + "\" must be a number from 0 to 1: the share of messages traced (e.g. 0.1)");
        } else {
          settings.sample_ratio = value + 0.0;  // -0 is 0
        }
      }
    }
    read_string(node, "tracing", "service_name", settings.service_name);
    if (node["service_name"] && settings.service_name.empty()) {
      error(node["service_name"], "tracing.service_name", "cannot be empty");
    }
    read_int(node, "tracing", "max_queued", settings.max_queued, 1, 1'000'000);
    if (node["max_batch"]) {
      read_int(node, "tracing", "max_batch", settings.max_batch, 1, 1'000'000);
      if (settings.max_batch > settings.max_queued) {
        error(node["max_batch"], "tracing.max_batch",
              std::to_string(settings.max_batch) + " is above max_queued (" + std::to_string(settings.max_queued) +
                  "): a batch is taken from the spans queued");
      }
    } else {
      // The default batch never exceeds a smaller queue.
      settings.max_batch = std::min(settings.max_batch, settings.max_queued);
    }
    read_duration_within(node, "tracing", "interval", settings.interval, Duration(100), Duration(3'600'000),
                         "100ms to 1h");
    read_duration_within(node, "tracing", "request_timeout", settings.request_timeout, Duration(100), Duration(60'000),
                         "100ms to 60s");
    tracing = settings;
  }

  // Off unless given; every key but bucket has a default.
  void read_ledger(const YAML::Node& node, std::optional<LedgerConfig>& ledger) {
    if (!node) return;
    if (!check_map(node, "ledger", config_keys::kLedger)) return;
    LedgerConfig settings;
    read_string(node, "ledger", "bucket", settings.bucket, true);
    if (!settings.bucket.empty() && !jetstream::valid_bucket_name(settings.bucket)) {
      error(node["bucket"], "ledger.bucket",
            "\"" + settings.bucket + "\" is not a key-value bucket's name: letters, digits, '_' and '-' only");
    }
    read_duration_within(node, "ledger", "interval", settings.interval, Duration(100), Duration(3'600'000),
                         "100ms to 1h");
    read_int(node, "ledger", "max_records", settings.max_records, 1, 10'000'000);
    read_int(node, "ledger", "max_in_flight", settings.max_in_flight, 1, 4096);
    ledger = settings;
  }

  void read_handlers(const YAML::Node& node, std::vector<HandlerSettings>& handlers) {
    if (!node) {
      errors_.push_back(file_ + ":1: handlers: is required (a list of handlers with name and patterns)");
      return;
    }
    if (!node.IsSequence() || node.size() == 0) {
      error(node, "handlers", "expected a non-empty list of handlers");
      return;
    }
    if (node.size() > kMaxHandlers) {
      error(node, "handlers", "at most " + std::to_string(kMaxHandlers) + " handlers may be declared");
    }
    std::set<std::string> names;
    for (std::size_t i = 0; i < node.size(); ++i) {
      const auto item = node[i];
      const std::string path = "handlers[" + std::to_string(i) + "]";
      if (!check_map(item, path, config_keys::kHandler)) {
        continue;
      }
      HandlerSettings handler;
      read_string(item, path, "name", handler.name, true);
      if (!handler.name.empty()) {
        if (handler.name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") !=
            std::string::npos) {
          error(either(item, "name"), path + ".name",
                "\"" + handler.name + "\" may use only letters, digits, '_' and '-'");
        } else if (!names.insert(handler.name).second) {
          error(either(item, "name"), path + ".name", "\"" + handler.name + "\" is declared twice");
        }
      }
      if (const auto patterns = item["patterns"]) {
        handler.patterns = read_string_list(patterns, path + ".patterns");
        if (handler.patterns.empty()) error(patterns, path + ".patterns", "needs at least one pattern");
        for (std::size_t p = 0; p < handler.patterns.size(); ++p) {
          if (auto why = pattern_error(handler.patterns[p])) {
            const auto at = patterns.IsSequence() ? patterns[p] : patterns;
            error(at, path + ".patterns[" + std::to_string(p) + "]", "\"" + handler.patterns[p] + "\": " + *why);
          }
        }
      } else {
        error(item, path + ".patterns", "is required");
      }
      read_int(item, path, "max_inflight", handler.max_inflight, 1, 65536);
      read_duration(item, path, "ack_timeout", handler.ack_timeout);
      if (handler.ack_timeout < Duration(1))
        error(either(item, "ack_timeout"), path + ".ack_timeout", "must be more than 0");
      if (const auto allow = item["allow"]) read_allow(allow, path + ".allow", handler.allow);
      read_int(item, path, "max_instances", handler.max_instances, 0, 1'000'000);
      read_rate(item, path, "max_rate", handler.max_rate);
      if (const auto when_full = item["when_full"]) {
        if (const auto text = string(when_full, path + ".when_full")) {
          if (*text == "hand_back") {
            handler.when_full = WhenFull::kHandBack;
          } else if (*text != "hold") {
            error(when_full, path + ".when_full", "\"" + *text + "\" must be hold or hand_back");
          }
        }
      }
      if (const auto order_by = item["order_by"]) {
        if (const auto text = string(order_by, path + ".order_by")) {
          if (auto parsed = parse_order_by(*text)) {
            handler.order_by = std::move(*parsed);
          } else {
            error(order_by, path + ".order_by",
                  "\"" + *text +
                      "\" must be key (the message key), token:N (its Nth '.'-separated token, N from 1 to 999) "
                      "or header:NAME (a NATS header's value; NAME printable, without ':' or spaces)");
          }
        }
      }
      if (const auto retry = item["retry"]) read_retry(retry, path + ".retry", handler);
      if (const auto dead_letter = item["dead_letter"]) read_dead_letter(dead_letter, path + ".dead_letter", handler);
      if (const auto publish = item["publish"]) read_publish(publish, path + ".publish", handler);
      read_bool(item, path, "paused", handler.paused);
      read_bool(item, path, "adaptive_inflight", handler.adaptive_inflight);
      read_int(item, path, "min_inflight", handler.min_inflight, 1, 65536);
      if (item["min_inflight"] && !handler.adaptive_inflight) {
        error(item["min_inflight"], path + ".min_inflight",
              "is the floor of an adaptive in-flight limit: it needs adaptive_inflight: true");
      } else if (handler.min_inflight > handler.max_inflight) {
        error(item["min_inflight"], path + ".min_inflight",
              std::to_string(handler.min_inflight) + " is above max_inflight (" + std::to_string(handler.max_inflight) +
                  "), the ceiling it adapts to");
      }
      // The READY line that announces the handler's patterns must fit in one line a client accepts.
      const std::size_t ready =
          proto::ready_line_length(handler.name, static_cast<std::uint32_t>(handler.max_inflight), handler.patterns);
      if (ready > proto::kMaxDeliveryLine) {
        error(either(item, "patterns"), path + ".patterns",
              "announcing these patterns takes a READY line of " + std::to_string(ready) + " bytes, more than the " +
                  std::to_string(proto::kMaxDeliveryLine) +
                  " a line from jetfan may have; use fewer or shorter patterns (a '#' or '*' covers many)");
      }
      handlers.push_back(std::move(handler));
    }
  }

  void read_retry(const YAML::Node& node, const std::string& path, HandlerSettings& handler) {
    if (!check_map(node, path, config_keys::kRetry)) return;
    RetrySettings retry;
    read_int(node, path, "max_attempts", retry.max_attempts, 0, 1'000'000);
    for (const char* key : {"backoff", "backoff_max"}) {
      if (!node[key]) continue;
      Duration value{-1};
      read_duration(node, path, key, value);
      if (value < Duration(0)) continue;
      if (value < Duration(1)) error(node[key], join(path, key), "must be more than 0");
      (std::string_view(key) == "backoff" ? retry.backoff : retry.backoff_max) = value;
    }
    if (retry.backoff && retry.backoff_max && *retry.backoff_max < *retry.backoff) {
      error(node["backoff_max"], path + ".backoff_max",
            "must not be less than " + path + ".backoff (" + std::to_string(retry.backoff->count()) + "ms)");
    }
    handler.retry = retry;
  }

  void read_publish(const YAML::Node& node, const std::string& path, HandlerSettings& handler) {
    if (!check_map(node, path, config_keys::kPublish)) return;
    PublishSettings publish;
    if (const auto subjects = node["subjects"]) {
      publish.subjects = read_string_list(subjects, path + ".subjects");
      if (publish.subjects.empty()) error(subjects, path + ".subjects", "needs at least one subject pattern");
      for (std::size_t i = 0; i < publish.subjects.size(); ++i) {
        if (auto why = subject_pattern_error(publish.subjects[i])) {
          const auto at = subjects.IsSequence() ? subjects[i] : subjects;
          error(at, path + ".subjects[" + std::to_string(i) + "]",
                "\"" + publish.subjects[i] + "\" " + *why +
                    " (a NATS subject pattern: '.'-separated tokens, '*' for one token, '>' last for the rest)");
        }
      }
    } else {
      error(node, path + ".subjects", "is required: the subjects the handler may publish to");
    }
    read_int(node, path, "max_in_flight", publish.max_in_flight, 1, 1'000'000);
    read_size(node, path, "max_bytes", publish.max_bytes, 1);
    read_duration(node, path, "timeout", publish.timeout);
    if (publish.timeout < Duration(1)) error(either(node, "timeout"), path + ".timeout", "must be more than 0");
    handler.publish = std::move(publish);
  }

  void read_dead_letter(const YAML::Node& node, const std::string& path, HandlerSettings& handler) {
    if (!check_map(node, path, config_keys::kDeadLetter)) return;
    read_string(node, path, "subject", handler.dead_letter_subject, true);
    const std::string& subject = handler.dead_letter_subject;
    if (subject.empty()) return;
    // A publish subject: tokens of printable characters, no wildcards, no empty token.
    bool valid = subject.front() != '.' && subject.back() != '.' && subject.find("..") == std::string::npos;
    for (const char c : subject) valid = valid && c > ' ' && c != '*' && c != '>' && c != 0x7f;
    if (!valid) {
      error(node["subject"], path + ".subject",
            "\"" + subject +
                "\" is not a subject to publish to: dot-separated tokens, no spaces, no '*' or '>', no empty token");
    }
  }

  void read_delivery(const YAML::Node& node, DeliverySettings& delivery) {
    if (!node) return;
    if (!check_map(node, "delivery", config_keys::kDelivery)) return;
    read_duration(node, "delivery", "nak_delay", delivery.nak_delay);
    read_duration(node, "delivery", "nak_delay_max", delivery.nak_delay_max);
    read_int(node, "delivery", "remember", delivery.remember, 0, 100'000'000);
    read_duration(node, "delivery", "drain_timeout", delivery.drain_timeout);
    if (delivery.nak_delay_max < delivery.nak_delay) {
      error(node, "delivery.nak_delay_max", "must not be less than delivery.nak_delay");
    }
  }

  void read_log(const YAML::Node& node, Config& config) {
    if (!node) return;
    if (!check_map(node, "log", config_keys::kLog)) return;
    std::string& level = config.log_level;
    read_string(node, "log", "level", level);
    static const std::set<std::string> kLevels = {"trace", "debug", "info", "warn", "error"};
    if (!kLevels.count(level))
      error(either(node, "level"), "log.level", "\"" + level + "\" must be trace, debug, info, warn or error");
    std::string format = "text";
    read_string(node, "log", "format", format);
    if (format == "json") {
      config.log_format = LogFormat::kJson;
    } else if (format != "text") {
      error(either(node, "format"), "log.format", "\"" + format + "\" must be text or json");
    }
  }

  void read(const YAML::Node& root, Config& config) {
    if (!root || root.IsNull()) {
      errors_.push_back(file_ + ":1: (top): the file is empty");
      return;
    }
    if (!check_map(root, "", config_keys::kTop)) {
      return;
    }
    read_nats(root["nats"], config.nats);
    read_consumer(root["consumer"], config.consumer);
    if (const auto key = root["key"]) {
      if (check_map(key, "key", config_keys::kKey)) read_string(key, "key", "strip_prefix", config.key.strip_prefix);
      const std::string& prefix = config.key.strip_prefix;
      if (prefix.find_first_of("*> \t\r\n") != std::string::npos) {
        error(either(key, "strip_prefix"), "key.strip_prefix",
              "\"" + prefix + "\" must be a literal subject prefix: no wildcards ('*', '>') and no white space");
      }
    }
    read_socket(root["socket"], config.socket);
    read_control(root["control"], config.socket, config.control);
    read_metrics(root["metrics"], config.metrics);
    read_tracing(root["tracing"], config.tracing);
    read_ledger(root["ledger"], config.ledger);
    read_handlers(root["handlers"], config.handlers);
    read_delivery(root["delivery"], config.delivery);
    read_log(root["log"], config);
    if (config.nats.servers.empty()) config.nats.servers = {defaults::kServer};
    if (config.nats.name.empty()) config.nats.name = "jetfan-" + config.consumer.durable;
  }

 private:
  std::string file_;
  std::vector<std::string>& errors_;
};

// What the text says, as far as it could be read; `errors` gets what is wrong with it.
Config parse_config(const std::string& text, const std::string& name, std::vector<std::string>& errors) {
  Config config;
  config.file = name;
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    errors.push_back(name + ":" + std::to_string(e.mark.line + 1) + ": (syntax): " + e.msg);
    return config;
  }
  try {
    ConfigReader(name, errors).read(root, config);
  } catch (const YAML::Exception& e) {
    // A shape of document the reader did not foresee: still an error report, never a crash.
    errors.push_back(name + ":" + std::to_string(e.mark.line + 1) + ": (document): " + e.msg);
  }
  return config;
}

}  // namespace

ConfigResult load_config_text(const std::string& text, const std::string& name) {
  ConfigResult result;
  Config config = parse_config(text, name, result.errors);
  if (result.errors.empty()) result.config = std::move(config);
  return result;
}

ConfigResult load_config_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    ConfigResult result;
    result.errors.push_back(path + ":0: (file): cannot be read");
    return result;
  }
  std::stringstream text;
  text << in.rdbuf();
  ConfigResult result;
  Config config = parse_config(text.str(), path, result.errors);
  // The names are looked up even if the text has other errors, so that one run reports them all.
  resolve_accounts(config, result.errors);
  if (result.errors.empty()) result.config = std::move(config);
  return result;
}

}  // namespace jetfan
