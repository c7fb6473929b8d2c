#pragma once
// RAII owners for cnats objects: each is a unique_ptr that calls the matching destroy function.

#include <nats/nats.h>

#include <memory>

namespace jetfan {

template <typename T, void (*Destroy)(T*)>
struct NatsDeleter {
  void operator()(T* p) const noexcept {
    if (p) Destroy(p);
  }
};

using NatsOptionsPtr = std::unique_ptr<natsOptions, NatsDeleter<natsOptions, natsOptions_Destroy>>;
using NatsConnectionPtr = std::unique_ptr<natsConnection, NatsDeleter<natsConnection, natsConnection_Destroy>>;
using NatsSubscriptionPtr = std::unique_ptr<natsSubscription, NatsDeleter<natsSubscription, natsSubscription_Destroy>>;
using NatsMsgPtr = std::unique_ptr<natsMsg, NatsDeleter<natsMsg, natsMsg_Destroy>>;
using JsCtxPtr = std::unique_ptr<jsCtx, NatsDeleter<jsCtx, jsCtx_Destroy>>;
using JsConsumerInfoPtr = std::unique_ptr<jsConsumerInfo, NatsDeleter<jsConsumerInfo, jsConsumerInfo_Destroy>>;
using NatsInboxPtr = std::unique_ptr<natsInbox, NatsDeleter<natsInbox, natsInbox_Destroy>>;
using KvStorePtr = std::unique_ptr<kvStore, NatsDeleter<kvStore, kvStore_Destroy>>;
using KvWatcherPtr = std::unique_ptr<kvWatcher, NatsDeleter<kvWatcher, kvWatcher_Destroy>>;
using KvEntryPtr = std::unique_ptr<kvEntry, NatsDeleter<kvEntry, kvEntry_Destroy>>;

}  // namespace jetfan
