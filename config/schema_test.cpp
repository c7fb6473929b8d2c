// docs/jetfan.schema.json, the JSON Schema editors use for jetfan.yaml (yaml-language-server), held
// to the parser both ways: each section's properties are exactly the keys config_keys.hpp lists for
// it (what the loader accepts), every object refuses other keys as the loader does, and the example
// config validates. The validator here knows the part of JSON Schema the file uses and refuses any
// other keyword, so that the schema cannot grow past what is checked.

#include <yaml-cpp/yaml.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "config.hpp"
#include "config_keys.hpp"

namespace {

using nlohmann::json;

std::string read_text(const char* path) {
  std::ifstream in(path);
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

const json& schema() {
  static const json parsed = json::parse(read_text(JETFAN_CONFIG_SCHEMA));
  return parsed;
}

// A YAML document as the JSON an editor's YAML 1.2 reader makes of it: plain scalars that look like
// integers, floats, booleans or null are those; quoted ones and the rest are strings.
json to_json(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      json out = json::object();
      for (const auto& entry : node) out[entry.first.Scalar()] = to_json(entry.second);
      return out;
    }
    case YAML::NodeType::Sequence: {
      json out = json::array();
      for (const auto& item : node) out.push_back(to_json(item));
      return out;
    }
    case YAML::NodeType::Scalar: {
      const std::string& text = node.Scalar();
      if (node.Tag() == "!") return text;  // quoted
      static const std::regex integer("^[-+]?[0-9]+$");
      if (std::regex_match(text, integer)) return std::stoll(text);
      static const std::regex floating(R"(^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$)");
      if (std::regex_match(text, floating)) return std::stod(text);
      if (text == "true" || text == "false") return text == "true";
      if (text == "null" || text == "~") return nullptr;
      return text;
    }
    default:
      return nullptr;
  }
}

class Validator {
 public:
  std::vector<std::string> errors;

  void validate(const json& rule, const json& value, const std::string& where) {
    for (const auto& [keyword, argument] : rule.items()) {
      if (!kKnown.count(keyword))
        errors.push_back("the schema uses " + keyword + ", which this validator does not know");
    }
    if (rule.contains("$ref")) validate(resolve(rule["$ref"]), value, where);
    if (rule.contains("anyOf")) {
      bool any = false;
      for (const auto& choice : rule["anyOf"]) {
        Validator trial;
        trial.validate(choice, value, where);
        any = any || trial.errors.empty();
      }
      if (!any) errors.push_back(where + ": matches none of the forms it may take");
    }
    if (rule.contains("enum") && std::find(rule["enum"].begin(), rule["enum"].end(), value) == rule["enum"].end()) {
      errors.push_back(where + ": " + value.dump() + " is not one of " + rule["enum"].dump());
    }
    if (rule.contains("type") && !has_type(value, rule["type"].get<std::string>())) {
      errors.push_back(where + ": " + value.dump() + " is not of type " + rule["type"].get<std::string>());
      return;
    }
    if (value.is_string()) {
      const auto text = value.get<std::string>();
      if (rule.contains("pattern") && !std::regex_search(text, std::regex(rule["pattern"].get<std::string>()))) {
        errors.push_back(where + ": \"" + text + "\" does not match " + rule["pattern"].get<std::string>());
      }
      if (rule.contains("maxLength") && text.size() > rule["maxLength"].get<std::size_t>()) {
        errors.push_back(where + ": longer than " + rule["maxLength"].dump());
      }
      if (rule.contains("minLength") && text.size() < rule["minLength"].get<std::size_t>()) {
        errors.push_back(where + ": shorter than " + rule["minLength"].dump());
      }
    }
    if (value.is_number()) {  // as doubles: exact for every integer the schema bounds
      if (rule.contains("minimum") && value.get<double>() < rule["minimum"].get<double>())
        errors.push_back(where + ": below " + rule["minimum"].dump());
      if (rule.contains("maximum") && value.get<double>() > rule["maximum"].get<double>())
        errors.push_back(where + ": above " + rule["maximum"].dump());
    }
    if (value.is_array()) {
      if (rule.contains("minItems") && value.size() < rule["minItems"].get<std::size_t>())
        errors.push_back(where + ": fewer than " + rule["minItems"].dump() + " items");
      if (rule.contains("maxItems") && value.size() > rule["maxItems"].get<std::size_t>())
        errors.push_back(where + ": more than " + rule["maxItems"].dump() + " items");
      if (rule.contains("items")) {
        for (std::size_t i = 0; i < value.size(); ++i) {
          validate(rule["items"], value[i], where + "[" + std::to_string(i) + "]");
        }
      }
    }
    if (value.is_object()) {
      const json properties = rule.value("properties", json::object());
      for (const auto& [key, item] : value.items()) {
        const std::string at = where.empty() ? key : where + "." + key;
        if (properties.contains(key)) {
          validate(properties[key], item, at);
        } else if (rule.contains("additionalProperties") && rule["additionalProperties"] == false) {
          errors.push_back(at + ": not a key the schema allows");
        }
      }
      for (const auto& key : rule.value("required", json::array())) {
        if (!value.contains(key.get<std::string>())) {
          errors.push_back((where.empty() ? "" : where + ".") + key.get<std::string>() + ": required");
        }
      }
    }
  }

 private:
  inline static const std::set<std::string> kKnown = {"$schema",   "$id",         "$defs",      "$ref",
                                                      "title",     "description", "default",    "type",
                                                      "anyOf",     "enum",        "pattern",    "maxLength",
                                                      "minLength", "minimum",     "maximum",    "minItems",
                                                      "maxItems",  "items",       "properties", "additionalProperties",
                                                      "required"};

  static const json& resolve(const json& reference) {
    const auto text = reference.get<std::string>();
    REQUIRE(text.rfind("#/$defs/", 0) == 0);
    return schema()["$defs"][text.substr(8)];
  }
  static bool has_type(const json& value, const std::string& type) {
    if (type == "object") return value.is_object();
    if (type == "array") return value.is_array();
    if (type == "string") return value.is_string();
    if (type == "integer") return value.is_number_integer();
    if (type == "number") return value.is_number();
    if (type == "boolean") return value.is_boolean();
    FAIL("the schema uses type " << type << ", which this validator does not know");
    return false;
  }
};

std::vector<std::string> validate(const std::string& yaml) {
  Validator validator;
  validator.validate(schema(), to_json(YAML::Load(yaml)), "");
  return validator.errors;
}

template <std::size_t N>
std::set<std::string> keys(const std::array<const char*, N>& list) {
  return {list.begin(), list.end()};
}

std::set<std::string> properties(const std::string& pointer) {
  const auto& rule = schema().at(json::json_pointer(pointer));
  std::set<std::string> out;
  for (const auto& [key, value] : rule.at("properties").items()) out.insert(key);
  return out;
}

// Every object rule of the schema (one with properties), as a JSON pointer.
void object_rules(const json& rule, const std::string& pointer, std::set<std::string>& out) {
  if (!rule.is_object()) return;
  if (rule.contains("properties")) out.insert(pointer);
  for (const auto& [key, value] : rule.items()) {
    if (key == "properties") {
      for (const auto& [name, property] : value.items()) object_rules(property, pointer + "/properties/" + name, out);
    } else if (key == "items") {
      object_rules(value, pointer + "/" + key, out);
    } else if (key == "$defs") {
      for (const auto& [name, definition] : value.items()) object_rules(definition, pointer + "/$defs/" + name, out);
    }
  }
}

}  // namespace

TEST_CASE("the config schema's properties are the keys the config loader accepts, section by section", "[schema]") {
  namespace k = jetfan::config_keys;
  const std::vector<std::pair<std::string, std::set<std::string>>> sections = {
      {"", keys(k::kTop)},
      {"/properties/nats", keys(k::kNats)},
      {"/properties/nats/properties/tls", keys(k::kNatsTls)},
      {"/properties/consumer", keys(k::kConsumer)},
      {"/properties/key", keys(k::kKey)},
      {"/properties/socket", keys(k::kSocket)},
      {"/properties/control", keys(k::kControl)},
      {"/properties/metrics", keys(k::kMetrics)},
      {"/properties/tracing", keys(k::kTracing)},
      {"/properties/ledger", keys(k::kLedger)},
      {"/properties/handlers/items", keys(k::kHandler)},
      {"/$defs/allow", keys(k::kAllow)},  // handlers[].allow, control.allow and control.allow_read
      {"/properties/handlers/items/properties/retry", keys(k::kRetry)},
      {"/properties/handlers/items/properties/dead_letter", keys(k::kDeadLetter)},
      {"/properties/handlers/items/properties/publish", keys(k::kPublish)},
      {"/properties/delivery", keys(k::kDelivery)},
      {"/properties/log", keys(k::kLog)},
  };
  std::set<std::string> checked;
  for (const auto& [pointer, accepted] : sections) {
    INFO("schema " << (pointer.empty() ? "(top)" : pointer));
    CHECK(properties(pointer) == accepted);
    const auto& rule = schema().at(json::json_pointer(pointer));
    CHECK(rule.value("additionalProperties", true) == false);  // unknown keys are errors there too
    CHECK(rule.value("type", "") == "object");
    for (const auto& [key, property] : rule.at("properties").items()) {
      INFO(key);
      CHECK(property.contains("description"));  // what an editor shows
    }
    checked.insert(pointer);
  }
  // No section of the schema escapes the comparison above.
  std::set<std::string> all;
  object_rules(schema(), "", all);
  CHECK(all == checked);
}

TEST_CASE("the example config and the container's config validate against the config schema", "[schema]") {
  for (const char* path : {JETFAN_EXAMPLE_CONFIG, JETFAN_DOCKER_CONFIG}) {
    INFO(path);
    const auto errors = validate(read_text(path));
    CHECK(errors == std::vector<std::string>{});
  }
  CHECK_THAT(read_text(JETFAN_EXAMPLE_CONFIG),
             Catch::Contains("# yaml-language-server: $schema=../docs/jetfan.schema.json\n"));
}

TEST_CASE("the config schema refuses what the loader refuses: unknown keys, bad values, missing sections", "[schema]") {
  const std::string base = "consumer: {stream: S, durable: D}\nsocket: {path: /run/j.sock}\n";
  const std::string handlers = "handlers: [{name: a, patterns: [x]}]\n";
  REQUIRE(validate(base + handlers).empty());
  REQUIRE(jetfan::load_config_text(base + handlers, "good.yaml").errors.empty());
  const std::string tracing =
      "tracing: {endpoint: \"http://[::1]:4318/v1/traces\", sample_ratio: 0.25, service_name: orders,"
      " max_queued: 100, max_batch: 100, interval: 100ms, request_timeout: 60s}\n";
  REQUIRE(validate(base + handlers + tracing).empty());
  REQUIRE(jetfan::load_config_text(base + handlers + tracing, "good.yaml").errors.empty());
  for (const std::string ledger : {"ledger: {bucket: jetfan_confirmations}\n",
                                   "ledger: {bucket: Jet-fan_2, interval: 100ms, max_records: 1, max_in_flight: 1}\n",
                                   "ledger: {bucket: b, interval: 1h, max_records: 10000000, max_in_flight: 4096}\n"}) {
    INFO(ledger);
    CHECK(validate(base + handlers + ledger).empty());
    CHECK(jetfan::load_config_text(base + handlers + ledger, "good.yaml").errors.empty());
  }
  const std::vector<std::pair<std::string, std::string>> bad = {
      {base + handlers + "surprise: 1\n", "surprise: not a key the schema allows"},
      {base + handlers + "log: {level: info, colour: true}\n", "log.colour: not a key the schema allows"},
      {base + handlers + "log: {level: loud}\n", "log.level: \"loud\" is not one of"},
      {base + handlers + "log: {format: xml}\n", "log.format: \"xml\" is not one of"},
      {base + handlers + "delivery: {nak_delay: 5}\n", "delivery.nak_delay"},
      {base + handlers + "nats: {servers: [\"http://x:4222\"]}\n", "nats.servers"},
      {base + handlers + "tracing: {sample_ratio: 0.5}\n", "tracing.endpoint: required"},
      {base + handlers + "tracing: {endpoint: \"https://c:4318\"}\n",
       "tracing.endpoint: \"https://c:4318\" does not match"},
      {base + handlers + "tracing: {endpoint: \"http://me@c:4318\"}\n", "tracing.endpoint"},
      {base + handlers + "tracing: {endpoint: \"http://c\", sample_ratio: 1.5}\n", "tracing.sample_ratio: above 1"},
      {base + handlers + "tracing: {endpoint: \"http://c\", sample_ratio: -0.1}\n", "tracing.sample_ratio: below 0"},
      {base + handlers + "tracing: {endpoint: \"http://c\", sample_ratio: half}\n", "tracing.sample_ratio"},
      {base + handlers + "tracing: {endpoint: \"http://c\", service_name: \"\"}\n", "tracing.service_name: shorter"},
      {base + handlers + "tracing: {endpoint: \"http://c\", max_queued: 0}\n", "tracing.max_queued: below 1"},
      {base + handlers + "tracing: {endpoint: \"http://c\", interval: 5}\n", "tracing.interval"},
      {base + handlers + "ledger: {interval: 1s}\n", "ledger.bucket: required"},
      {base + handlers + "ledger: {bucket: \"\"}\n", "ledger.bucket: \"\" does not match"},
      {base + handlers + "ledger: {bucket: jetfan.confirmations}\n",
       "ledger.bucket: \"jetfan.confirmations\" does not match"},
      {base + handlers + "ledger: {bucket: b, max_inflight: 8}\n", "ledger.max_inflight: not a key the schema allows"},
      {base + handlers + "ledger: {bucket: b, interval: 5}\n", "ledger.interval"},
      {base + handlers + "ledger: {bucket: b, max_records: 0}\n", "ledger.max_records: below 1"},
      {base + handlers + "ledger: {bucket: b, max_records: 10000001}\n", "ledger.max_records: above 10000000"},
      {base + handlers + "ledger: {bucket: b, max_in_flight: 0}\n", "ledger.max_in_flight: below 1"},
      {base + handlers + "ledger: {bucket: b, max_in_flight: 4097}\n", "ledger.max_in_flight: above 4096"},
      {"consumer: {stream: S, durable: D}\n" + handlers, "socket: required"},
      {base + "handlers: [{name: a}]\n", "handlers[0].patterns: required"},
      {base + "handlers: [{name: a b, patterns: x}]\n", "handlers[0].name"},
      {base + "handlers: [{name: a, patterns: x, when_full: drop}]\n", "handlers[0].when_full"},
      {base + "handlers: [{name: a, patterns: x, max_inflight: 0}]\n", "handlers[0].max_inflight: below 1"},
      {"consumer: {stream: S, durable: D}\nsocket: {path: run/j.sock}\n" + handlers,
       "socket.path: \"run/j.sock\" does not match"},
  };
  for (const auto& [text, expected] : bad) {
    INFO(text);
    const auto errors = validate(text);
    CAPTURE(errors);
    const std::string& wanted = expected;  // clang 14 cannot capture a structured binding
    CHECK(std::any_of(errors.begin(), errors.end(),
                      [&](const std::string& error) { return error.find(wanted) != std::string::npos; }));
    // The loader refuses each of them too: the schema is no stricter than jetfan.
    CHECK_FALSE(jetfan::load_config_text(text, "bad.yaml").errors.empty());
  }
}
