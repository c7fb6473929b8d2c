#include "mesh_controller.hpp"

#include <stdexcept>

namespace jetfan::example {
namespace {

void check(natsStatus status, const std::string& what) {
  if (status == NATS_OK) return;
  natsStatus ignored;
  const char* detail = nats_GetLastError(&ignored);
  throw std::runtime_error(what + ": " + natsStatus_GetText(status) + (detail ? std::string(" ") + detail : ""));
}

}  // namespace

MeshController::MeshController(const std::string& url, const std::string& token)
    : MeshController(url, ControllerAuth{.token = token}) {}

MeshController::MeshController(const std::string& url, const ControllerAuth& auth) {
  natsOptions* raw_options = nullptr;
  check(natsOptions_Create(&raw_options), "options");
  NatsOptionsPtr options(raw_options);
  natsOptions_SetURL(raw_options, url.c_str());
  if (!auth.token.empty()) natsOptions_SetToken(raw_options, auth.token.c_str());
  if (!auth.creds.empty()) {
    check(natsOptions_SetUserCredentialsFromFiles(raw_options, auth.creds.c_str(), nullptr), "creds");
  }
  if (!auth.tls_ca.empty()) {
    check(natsOptions_SetSecure(raw_options, true), "tls");
    check(natsOptions_LoadCATrustedCertificates(raw_options, auth.tls_ca.c_str()), "tls ca");
  }
  if (!auth.tls_cert.empty()) {
    check(natsOptions_LoadCertificatesChain(raw_options, auth.tls_cert.c_str(), auth.tls_key.c_str()), "tls cert");
  }
  natsOptions_SetTimeout(raw_options, 2000);
  natsConnection* connection = nullptr;
  check(natsConnection_Connect(&connection, raw_options), "connect to " + url);
  connection_.reset(connection);
  jsCtx* js = nullptr;
  check(natsConnection_JetStream(&js, connection, nullptr), "jetstream");
  js_.reset(js);
}

void MeshController::create_stream(const std::string& stream, const std::vector<std::string>& subjects,
                                   std::int64_t max_msgs, std::chrono::milliseconds duplicate_window) {
  jsStreamConfig config;
  jsStreamConfig_Init(&config);
  config.Name = stream.c_str();
  std::vector<const char*> names;
  names.reserve(subjects.size());
  for (const auto& s : subjects) names.push_back(s.c_str());
  config.Subjects = names.data();
  config.SubjectsLen = static_cast<int>(names.size());
  config.Storage = js_FileStorage;
  if (max_msgs > 0) {
    config.MaxMsgs = max_msgs;
    config.Discard = js_DiscardNew;
  }
  config.Duplicates = std::chrono::duration_cast<std::chrono::nanoseconds>(duplicate_window).count();
  jsStreamInfo* info = nullptr;
  jsErrCode code;
  const natsStatus status = js_AddStream(&info, js_.get(), &config, nullptr, &code);
  std::unique_ptr<jsStreamInfo, NatsDeleter<jsStreamInfo, jsStreamInfo_Destroy>> owned(info);
  check(status, "create stream " + stream);
}

void MeshController::create_key_value(const std::string& bucket, std::chrono::milliseconds ttl, int replicas) {
  kvConfig config;
  kvConfig_Init(&config);
  config.Bucket = bucket.c_str();
  config.History = 1;
  config.TTL = std::chrono::duration_cast<std::chrono::nanoseconds>(ttl).count();  // cnats takes nanoseconds
  config.Replicas = replicas;
  kvStore* kv = nullptr;
  const natsStatus status = js_CreateKeyValue(&kv, js_.get(), &config);
  KvStorePtr owned(kv);
  check(status, "create key-value bucket " + bucket);
}

void MeshController::delete_stream(const std::string& stream) {
  jsErrCode code;
  const natsStatus status = js_DeleteStream(js_.get(), stream.c_str(), nullptr, &code);
  if (status != NATS_NOT_FOUND) check(status, "delete stream " + stream);
}

void MeshController::create_consumer(const std::string& stream, const ConsumerSpec& spec) {
  jsConsumerConfig config;
  jsConsumerConfig_Init(&config);
  config.Durable = spec.durable.c_str();
  if (!spec.filter.empty()) config.FilterSubject = spec.filter.c_str();
  config.AckPolicy = spec.ack_policy == "none" ? js_AckNone : spec.ack_policy == "all" ? js_AckAll : js_AckExplicit;
  config.AckWait = std::chrono::duration_cast<std::chrono::nanoseconds>(spec.ack_wait).count();
  config.MaxDeliver = spec.max_deliver;
  config.MaxAckPending = spec.max_ack_pending;
  jsConsumerInfo* info = nullptr;
  jsErrCode code;
  const natsStatus status = js_AddConsumer(&info, js_.get(), stream.c_str(), &config, nullptr, &code);
  JsConsumerInfoPtr owned(info);
  check(status, "create consumer " + spec.durable);
}

std::uint64_t MeshController::publish(const std::string& subject, const std::string& payload,
                                      const std::vector<std::pair<std::string, std::string>>& headers) {
  natsMsg* raw = nullptr;
  check(natsMsg_Create(&raw, subject.c_str(), nullptr, payload.data(), static_cast<int>(payload.size())), "message");
  NatsMsgPtr message(raw);
  for (const auto& [key, value] : headers) natsMsgHeader_Add(raw, key.c_str(), value.c_str());
  jsPubAck* ack = nullptr;
  jsErrCode code;
  const natsStatus status = js_PublishMsg(&ack, js_.get(), raw, nullptr, &code);
  std::unique_ptr<jsPubAck, NatsDeleter<jsPubAck, jsPubAck_Destroy>> owned(ack);
  check(status, "publish to " + subject);
  return ack->Sequence;
}

ConsumerState MeshController::state(const std::string& stream, const std::string& durable) {
  jsConsumerInfo* info = nullptr;
  jsErrCode code;
  const natsStatus status = js_GetConsumerInfo(&info, js_.get(), stream.c_str(), durable.c_str(), nullptr, &code);
  JsConsumerInfoPtr owned(info);
  check(status, "consumer info " + durable);
  return ConsumerState{info->NumPending, info->NumAckPending, info->NumRedelivered, info->Delivered.Stream,
                       info->AckFloor.Stream};
}

MeshController::StoredMessage MeshController::get_message(const std::string& stream, std::uint64_t seq) {
  natsMsg* raw = nullptr;
  jsErrCode code;
  check(js_GetMsg(&raw, js_.get(), stream.c_str(), seq, nullptr, &code), "get message " + std::to_string(seq));
  NatsMsgPtr message(raw);
  StoredMessage out;
  out.subject = natsMsg_GetSubject(raw);
  out.payload.assign(natsMsg_GetData(raw), static_cast<std::size_t>(natsMsg_GetDataLength(raw)));
  const char** keys = nullptr;
  int count = 0;
  if (natsMsgHeader_Keys(raw, &keys, &count) == NATS_OK) {
    for (int k = 0; k < count; ++k) {
      const char** values = nullptr;
      int value_count = 0;
      if (natsMsgHeader_Values(raw, keys[k], &values, &value_count) == NATS_OK) {
        for (int v = 0; v < value_count; ++v) out.headers.emplace_back(keys[k], values[v]);
        free(values);  // cnats hands out the array, not the strings
      }
    }
    free(keys);
  }
  return out;
}

void MeshController::delete_message(const std::string& stream, std::uint64_t seq) {
  jsErrCode code;
  check(js_DeleteMsg(js_.get(), stream.c_str(), seq, nullptr, &code), "delete message " + std::to_string(seq));
}

std::uint64_t MeshController::stream_messages(const std::string& stream) {
  jsStreamInfo* info = nullptr;
  jsErrCode code;
  const natsStatus status = js_GetStreamInfo(&info, js_.get(), stream.c_str(), nullptr, &code);
  std::unique_ptr<jsStreamInfo, NatsDeleter<jsStreamInfo, jsStreamInfo_Destroy>> owned(info);
  check(status, "stream info " + stream);
  return info->State.Msgs;
}

std::vector<std::string> MeshController::consumers(const std::string& stream) {
  jsConsumerNamesList* list = nullptr;
  jsErrCode code;
  const natsStatus status = js_ConsumerNames(&list, js_.get(), stream.c_str(), nullptr, &code);
  std::unique_ptr<jsConsumerNamesList, NatsDeleter<jsConsumerNamesList, jsConsumerNamesList_Destroy>> owned(list);
  if (status == NATS_NOT_FOUND) return {};
  check(status, "consumer names");
  return std::vector<std::string>(list->List, list->List + list->Count);
}

std::string MeshController::request(const std::string& subject, const std::string& body) {
  natsMsg* reply = nullptr;
  check(natsConnection_Request(&reply, connection_.get(), subject.c_str(), body.data(), static_cast<int>(body.size()),
                               5000),
        "request " + subject);
  NatsMsgPtr owned(reply);
  return std::string(natsMsg_GetData(reply), static_cast<std::size_t>(natsMsg_GetDataLength(reply)));
}

void MeshController::watch(const std::string& subject) {
  natsSubscription* sub = nullptr;
  check(natsConnection_SubscribeSync(&sub, connection_.get(), subject.c_str()), "subscribe " + subject);
  watch_.reset(sub);
  natsConnection_Flush(connection_.get());
}

int MeshController::watched() {
  std::uint64_t count = 0;
  if (watch_) natsSubscription_QueuedMsgs(watch_.get(), &count);
  return static_cast<int>(count);
}

}  // namespace jetfan::example
