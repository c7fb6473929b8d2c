#include "exec_environment.hpp"

#include <time.h>

#include <chrono>
#include <cstdio>
#include <map>

#include "publish_line.hpp"

namespace jetfan {
namespace {

bool is_ours(std::string_view entry) {
  const auto name = entry.substr(0, entry.find('='));
  return name == "JETFAN_HANDLER" || name == "JETFAN_KEY" || name == "JETFAN_SEQ" || name == "JETFAN_DELIVERIES" ||
         name == "JETFAN_SUBJECT" || name == "JETFAN_PUBLISHED" || name == "JETFAN_TRACEPARENT" ||
         name == "JETFAN_HEADERS" || name == "JETFAN_PUBLISH_FD" || name.rfind("JETFAN_HEADER_", 0) == 0;
}

// RFC 3339 in UTC with nanoseconds, which date(1) and every language's parser read.
std::string rfc3339(std::chrono::system_clock::time_point when) {
  const auto since_epoch = std::chrono::duration_cast<std::chrono::nanoseconds>(when.time_since_epoch()).count();
  const time_t seconds = static_cast<time_t>(since_epoch / 1'000'000'000);
  tm utc{};
  gmtime_r(&seconds, &utc);
  char text[64];
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ", utc.tm_year + 1900, utc.tm_mon + 1,
                utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, static_cast<long long>(since_epoch % 1'000'000'000));
  return text;
}

}  // namespace

std::string header_variable(std::string_view header_name) {
  std::string name = "JETFAN_HEADER_";
  for (const char c : header_name) {
    if (c >= 'a' && c <= 'z') {
      name.push_back(static_cast<char>(c - 'a' + 'A'));
    } else if ((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
      name.push_back(c);
    } else {
      name.push_back('_');
    }
  }
  return name;
}

std::vector<std::string> delivery_environment(const Delivery& delivery, std::string_view handler,
                                              const char* const* inherited) {
  std::vector<std::string> env;
  for (auto entry = inherited; entry && *entry; ++entry) {
    if (!is_ours(*entry)) env.emplace_back(*entry);
  }
  env.push_back("JETFAN_HANDLER=" + std::string(handler));
  env.push_back("JETFAN_KEY=" + delivery.key);
  env.push_back("JETFAN_SEQ=" + std::to_string(delivery.stream_seq));
  env.push_back("JETFAN_DELIVERIES=" + std::to_string(delivery.deliveries));
  env.push_back("JETFAN_PUBLISH_FD=" + std::to_string(kPublishFd));
  // Known from protocol version 2 on (a jetfan of version 1 leaves them out).
  if (!delivery.subject.empty()) env.push_back("JETFAN_SUBJECT=" + delivery.subject);
  if (delivery.published) env.push_back("JETFAN_PUBLISHED=" + rfc3339(*delivery.published));
  // Protocol version 3 on, when jetfan traces the delivery: its span's W3C traceparent.
  if (delivery.traceparent) env.push_back("JETFAN_TRACEPARENT=" + *delivery.traceparent);
  std::string all;
  std::map<std::string, std::vector<std::string>> by_variable;  // names alike but for case share one
  for (const auto& [name, value] : delivery.header_list()) {
    all += name + ": " + value + "\n";
    by_variable[header_variable(name)].push_back(value);
  }
  env.push_back("JETFAN_HEADERS=" + all);
  for (const auto& [variable, values] : by_variable) {
    std::string entry = variable + "=";
    for (std::size_t i = 0; i < values.size(); ++i) entry += (i ? "\n" : "") + values[i];
    env.push_back(std::move(entry));
  }
  return env;
}

}  // namespace jetfan
