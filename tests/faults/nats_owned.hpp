#pragma once
// The cnats owners the fault-suite tools use, and a check that turns a failed
// cnats call into an exception saying what failed.

#include <nats/nats.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "nats_handles.hpp"

namespace jetfan::faults {

// The project's owners (handles/nats_handles.hpp), under the names the tools use.
using OwnedOptions = NatsOptionsPtr;
using OwnedConnection = NatsConnectionPtr;
using OwnedSubscription = NatsSubscriptionPtr;
using OwnedMsg = NatsMsgPtr;
using OwnedJs = JsCtxPtr;

inline void check(natsStatus status, const std::string& what) {
  if (status == NATS_OK) return;
  natsStatus ignored;
  const char* detail = nats_GetLastError(&ignored);
  throw std::runtime_error(what + ": " + natsStatus_GetText(status) +
                           (detail && *detail ? std::string(" (") + detail + ")" : ""));
}

// Connects to a comma-separated list of URLs and keeps reconnecting for ever: the suite kills
// servers on purpose, and its tools must ride that out like jetfan does.
inline OwnedConnection connect_forever(const std::string& urls, const char* name) {
  natsOptions* raw = nullptr;
  check(natsOptions_Create(&raw), "options");
  OwnedOptions options(raw);
  std::vector<std::string> list(1);
  for (char c : urls) {
    if (c == ',') {
      list.emplace_back();
    } else {
      list.back().push_back(c);
    }
  }
  std::vector<const char*> servers;
  for (const auto& url : list) servers.push_back(url.c_str());
  check(natsOptions_SetServers(raw, servers.data(), static_cast<int>(servers.size())), "servers " + urls);
  natsOptions_SetName(raw, name);
  natsOptions_SetMaxReconnect(raw, -1);
  natsOptions_SetReconnectWait(raw, 100);
  natsOptions_SetTimeout(raw, 2000);
  natsOptions_SetRetryOnFailedConnect(raw, true, nullptr, nullptr);
  natsOptions_SetReconnectBufSize(raw, 64 * 1024 * 1024);
  natsConnection* connection = nullptr;
  const natsStatus status = natsConnection_Connect(&connection, raw);
  // With retry on failed connect, NATS_NOT_YET_CONNECTED means "connecting in the background".
  if (status != NATS_NOT_YET_CONNECTED) check(status, std::string("connect to ") + urls);
  return OwnedConnection(connection);
}

}  // namespace jetfan::faults
