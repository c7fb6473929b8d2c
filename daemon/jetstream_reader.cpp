#include "jetstream_reader.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/post.hpp>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "api_error.hpp"
#include "consumer_info.hpp"
#include "jetstream_subject.hpp"
#include "logging.hpp"
#include "nats_auth.hpp"
#include "publish_ack.hpp"
#include "received_headers.hpp"
#include "startup_error.hpp"
#include "stream_names.hpp"

namespace jetfan {
namespace asio = boost::asio;

// What cnats's callbacks hand to the io_context thread (messages do not come this way: the io
// thread reads them itself). cnats holds a raw pointer to it; `held_by_connection` is the
// reference that pointer stands for, dropped in the closed callback.
struct JetStreamReader::CnatsCallbacks : std::enable_shared_from_this<CnatsCallbacks> {
  explicit CnatsCallbacks(asio::io_context& context) : io(context) {}

  struct Published {
    std::uint64_t id = 0;
    bool stored = false;
    std::uint64_t stream_seq = 0;
    std::string stream;
    std::string error;
    bool duplicate = false;
    bool no_stream = false;
  };

  // A disconnect (with why) or a reconnect (why empty), in the order cnats reported them.
  struct Link {
    bool up = false;
    std::string why;
  };
  void push_link(Link event) {
    std::lock_guard lock(mutex);
    links.push_back(std::move(event));
    post_locked();
  }
  struct Api {
    std::uint64_t id = 0;
    std::string json;
    std::string error;
  };
  void push_published(Published answer, NatsMsgPtr message) {
    std::lock_guard lock(mutex);
    published.push_back(std::move(answer));
    spent.push_back(std::move(message));
    post_locked();
  }
  void push_api(Api answer, NatsMsgPtr message) {
    std::lock_guard lock(mutex);
    api.push_back(std::move(answer));
    spent.push_back(std::move(message));
    post_locked();
  }
  void post_locked() {
    if (posted) return;
    posted = true;
    asio::post(io, [self = shared_from_this()] {
      if (self->reader) self->reader->on_callbacks();
    });
  }
  asio::io_context& io;
  std::mutex mutex;
  std::vector<Link> links;
  std::vector<Published> published;
  std::vector<Api> api;
  std::vector<NatsMsgPtr> spent;  // the answers read, for the io thread to destroy (SpentMessages)
  bool posted = false;
  std::atomic<bool> closing{false};                    // set before an intended close, read by cnats threads
  JetStreamReader* reader = nullptr;                   // read and cleared on the io thread only
  std::shared_ptr<CnatsCallbacks> held_by_connection;  // until its closed callback
  std::mutex held_mutex;                               // guards the one above
  bool connection_closed = false;                      // the closed callback already ran
};

namespace {

using CnatsCallbacks = JetStreamReader::CnatsCallbacks;

}  // namespace

std::string nats_last_error(natsStatus status) {
  natsStatus ignored;
  const char* detail = nats_GetLastError(&ignored);
  std::string text = natsStatus_GetText(status);
  if (detail && *detail && text != detail) text += ": " + std::string(detail);
  return text;
}

namespace {

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ",") + redact_url(item);  // for logs
  return out;
}

void on_disconnected(natsConnection* connection, void* closure) {
  auto* callbacks = static_cast<CnatsCallbacks*>(closure);
  if (callbacks->closing) return;
  const char* text = nullptr;
  const natsStatus status = natsConnection_GetLastError(connection, &text);
  std::string why = status == NATS_OK ? std::string("the connection closed")
                                      : (text && *text ? std::string(text) : std::string(natsStatus_GetText(status)));
  log_warn("nats.disconnected", {{"reason", why}},
           "nats: disconnected ({}); reconnecting. Messages held and in flight are kept.", why);
  callbacks->push_link({false, std::move(why)});
}
void on_reconnected(natsConnection* connection, void* closure) {
  auto* callbacks = static_cast<CnatsCallbacks*>(closure);
  if (callbacks->closing) return;
  char url[256] = {0};
  natsConnection_GetConnectedUrl(connection, url, sizeof url);
  const std::string server = redact_url(url);
  log_info("nats.reconnected", {{"server", server}}, "nats: reconnected to {}; pulling anew", server);
  callbacks->push_link({true, {}});
}
// cnats calls this when it will call no more with this pointer. The reference it takes out may be
// the last, and the mutex goes with the CnatsCallbacks: it is dropped after the lock is released.
void on_closed(natsConnection*, void* closure) {
  auto* callbacks = static_cast<CnatsCallbacks*>(closure);
  std::shared_ptr<CnatsCallbacks> last;
  {
    std::lock_guard lock(callbacks->held_mutex);
    callbacks->connection_closed = true;
    last.swap(callbacks->held_by_connection);
  }
}
void on_async_error(natsConnection*, natsSubscription*, natsStatus status, void* closure) {
  if (static_cast<CnatsCallbacks*>(closure)->closing) return;
  log_error("nats.async_error", {{"reason", natsStatus_GetText(status)}}, "nats: asynchronous error: {}",
            natsStatus_GetText(status));
}

void destroy_message(void* message) { natsMsg_Destroy(static_cast<natsMsg*>(message)); }

// Past this many bytes between a reply subject and its payload the layout is not the one known: the
// server's max_payload, headers included, is at most 64 MiB.
constexpr std::uintptr_t kMaxHeaderGap = std::uintptr_t{64} << 20;

// The NATS/1.0 header block of a message, rebuilt from cnats's parsed headers; empty when it has none.
// Lossy (received_headers.hpp): for a message whose block as received cannot be had.
std::string header_block(natsMsg* message) {
  const char** keys = nullptr;
  int count = 0;
  if (natsMsgHeader_Keys(message, &keys, &count) != NATS_OK || count == 0) return {};
  std::string block = "NATS/1.0\r\n";
  for (int k = 0; k < count; ++k) {
    const char** values = nullptr;
    int value_count = 0;
    if (natsMsgHeader_Values(message, keys[k], &values, &value_count) == NATS_OK) {
      for (int v = 0; v < value_count; ++v) {
        block.append(keys[k]).append(": ").append(values[v]).append("\r\n");
      }
      free(values);  // cnats hands out the array, not the strings
    }
  }
  free(keys);
  block.append("\r\n");
  return block;
}

// cnats's parse of a message's headers, as fields; parses the block in place if it was not yet.
std::vector<ParsedField> parsed_fields(natsMsg* message) {
  std::vector<ParsedField> fields;
  const char** keys = nullptr;
  int count = 0;
  if (natsMsgHeader_Keys(message, &keys, &count) != NATS_OK) return fields;
  for (int k = 0; k < count; ++k) {
    const char** values = nullptr;
    int value_count = 0;
    if (natsMsgHeader_Values(message, keys[k], &values, &value_count) == NATS_OK) {
      for (int v = 0; v < value_count; ++v) fields.push_back({keys[k], values[v]});
      free(values);  // cnats hands out the array, not the strings
    }
  }
  free(keys);
  return fields;
}

// Sets the headers of a NATS/1.0 block on `message`; lines that are not "Name: value" are skipped.
void set_headers(natsMsg* message, std::string_view block) {
  std::size_t at = block.find("\r\n");
  while (at != std::string_view::npos && at + 2 < block.size()) {
    const std::size_t start = at + 2;
    const std::size_t end = block.find("\r\n", start);
    if (end == std::string_view::npos || end == start) break;
    const std::string_view line = block.substr(start, end - start);
    const std::size_t colon = line.find(':');
    if (colon != std::string_view::npos && colon > 0) {
      std::string_view value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
      natsMsgHeader_Add(message, std::string(line.substr(0, colon)).c_str(), std::string(value).c_str());
    }
    at = end;
  }
}

// cnats's delivery thread: JetStream's answer to a publish, recorded for the io thread.
void on_publish_answer(natsConnection*, natsSubscription*, natsMsg* raw, void* closure) {
  NatsMsgPtr message(raw);
  auto* callbacks = static_cast<CnatsCallbacks*>(closure);
  CnatsCallbacks::Published answer;
  const std::string_view subject = natsMsg_GetSubject(raw);
  const std::string_view token = subject.substr(subject.rfind('.') + 1);
  const char* code = nullptr;
  natsMsgHeader_Get(raw, "Status", &code);
  const std::string_view body(natsMsg_GetData(raw), static_cast<std::size_t>(natsMsg_GetDataLength(raw)));
  if (!token.empty() && token.front() == 'a') {  // an api_request's answer
    CnatsCallbacks::Api api;
    std::from_chars(token.data() + 1, token.data() + token.size(), api.id);
    if (code != nullptr) {
      api.error = std::string_view(code) == "503" ? std::string("no responders (is JetStream enabled?)")
                                                  : "status " + std::string(code);
    } else {
      api.json = std::string(body);
    }
    callbacks->push_api(std::move(api), std::move(message));
    return;
  }
  std::from_chars(token.data(), token.data() + token.size(), answer.id);
  if (code != nullptr) {
    const char* description = nullptr;
    natsMsgHeader_Get(raw, "Description", &description);
    answer.error = std::string(code) + " " + (description ? description : "");
    if (std::string_view(code) == "503") {
      answer.error = "no stream captures the subject (503 No Responders)";
      answer.no_stream = true;
    }
  } else {
    auto ack = jetstream::parse_publish_ack(body);
    if (auto* stored = std::get_if<jetstream::PublishAck>(&ack)) {
      answer.stored = true;
      answer.stream_seq = stored->seq;
      answer.stream = std::move(stored->stream);
      answer.duplicate = stored->duplicate;
    } else {
      answer.error = std::move(std::get<jetstream::ApiError>(ack).description);
    }
  }
  callbacks->push_published(std::move(answer), std::move(message));
}

}  // namespace

JetStreamReader::JetStreamReader(asio::io_context& io, const Config& config, MessageBytesArena& arena)
    : io_(io), config_(config), arena_(arena), callbacks_(std::make_shared<CnatsCallbacks>(io)), loop_(io) {
  callbacks_->reader = this;
  loop_.on_read([this] { on_read(); });
  pull_subject_ = jetstream::pull_subject(config.consumer.stream, config.consumer.durable);
  info_subject_ = jetstream::consumer_info_subject(config.consumer.stream, config.consumer.durable);
}

JetStreamReader::~JetStreamReader() {
  // close() can throw only where a thread or a timer cannot be had; the handles it would have closed
  // in order are then closed by their own destructors, which is all a destructor can still do.
  try {
    close(Duration(1000));
  } catch (...) {  // nothing to report to in a destructor
  }
  callbacks_->reader = nullptr;
}

NatsOptionsPtr JetStreamReader::make_options() {
  const auto& nats = config_.nats;
  natsOptions* raw = nullptr;
  if (natsOptions_Create(&raw) != NATS_OK) throw StartupError(kExitSoftware, "nats: cannot create options");
  NatsOptionsPtr options(raw);
  std::vector<const char*> servers;
  for (const auto& server : nats.servers) servers.push_back(server.c_str());
  auto check = [&](natsStatus status, const std::string& what) {
    if (status != NATS_OK)
      throw StartupError(kExitConfig, config_.file + ": nats." + what + ": " + nats_last_error(status));
  };
  CnatsCallbacks* closure = callbacks_.get();
  check(natsOptions_SetServers(raw, servers.data(), static_cast<int>(servers.size())), "servers");
  check(natsOptions_SetName(raw, nats.name.c_str()), "name");
  check(natsOptions_SetTimeout(raw, nats.connect_timeout.count()), "connect_timeout");
  check(natsOptions_SetMaxReconnect(raw, -1), "reconnect");
  check(natsOptions_SetReconnectWait(raw, nats.reconnect_wait.count()), "reconnect_wait");
  check(natsOptions_SetReconnectBufSize(raw, defaults::kReconnectBufferBytes), "reconnect buffer");
  check(natsOptions_SetDisconnectedCB(raw, on_disconnected, closure), "callbacks");
  check(natsOptions_SetReconnectedCB(raw, on_reconnected, closure), "callbacks");
  check(natsOptions_SetClosedCB(raw, on_closed, closure), "callbacks");
  check(natsOptions_SetErrorHandler(raw, on_async_error, closure), "callbacks");
  check(loop_.install(raw), "event loop");
  if (!nats.creds.empty()) check(natsOptions_SetUserCredentialsFromFiles(raw, nats.creds.c_str(), nullptr), "creds");
  if (!nats.nkey_seed.empty())
    check(natsOptions_SetNKeyFromSeed(raw, nats.nkey.c_str(), nats.nkey_seed.c_str()), "nkey_seed");
  // A secret in a file is read here, and cnats keeps its own copy: ours is wiped at once.
  auto secret = [&](const std::string& value, const std::string& setting, const std::string& file) {
    if (file.empty()) return value;
    FileSecret read = read_file_secret(setting, file);
    if (!read.value) throw StartupError(kExitConfig, config_.file + ": " + read.error);
    return std::move(*read.value);
  };
  if (!nats.token.empty() || !nats.token_file.empty()) {
    std::string token = secret(nats.token, "nats.token_file", nats.token_file);
    const natsStatus status = natsOptions_SetToken(raw, token.c_str());
    wipe_secret(token);
    check(status, "token");
  }
  if (!nats.user.empty()) {
    std::string password = secret(nats.password, "nats.password_file", nats.password_file);
    const natsStatus status = natsOptions_SetUserInfo(raw, nats.user.c_str(), password.c_str());
    wipe_secret(password);
    check(status, "user");
  }
  // A tls:// URL alone must not fall back to plain text, as cnats would with a server without TLS.
  if (wants_tls(nats)) check(natsOptions_SetSecure(raw, true), "tls");
  if (nats.tls) {
    if (!nats.tls->ca.empty()) check(natsOptions_LoadCATrustedCertificates(raw, nats.tls->ca.c_str()), "tls.ca");
    if (!nats.tls->cert.empty()) {
      check(natsOptions_LoadCertificatesChain(raw, nats.tls->cert.c_str(), nats.tls->key.c_str()), "tls.cert");
    }
  }
  return options;
}

std::string JetStreamReader::client_version() { return nats_GetVersion(); }

bool JetStreamReader::connect(const std::function<bool()>& stopping) {
  JETFAN_ON_IO_THREAD(thread_);
  const auto options = make_options();
  const std::string servers = join(config_.nats.servers);
  Duration delay = defaults::kRetryFirst;
  bool tls_closed = false;
  for (int attempt = 1;; ++attempt) {
    natsConnection* raw = nullptr;
    const natsStatus status = natsConnection_Connect(&raw, options.get());
    if (status == NATS_OK) {
      connection_.reset(raw);
      {
        // From now on cnats may call the connection callbacks until the closed one.
        std::lock_guard lock(callbacks_->held_mutex);
        if (!callbacks_->connection_closed) callbacks_->held_by_connection = callbacks_;
      }
      log_info("nats.connected", {{"server", servers}, {"name", config_.nats.name}}, "nats: connected to {} as \"{}\"",
               servers, config_.nats.name);
      return true;
    }
    const std::string why = nats_last_error(status);
    const auto verdict = judge_connect_failure(status, why, config_.nats, config_.file, servers, tls_closed);
    if (verdict.exit_code != 0) throw StartupError(verdict.exit_code, verdict.message);
    tls_closed = verdict.tls_closed;
    log_warn("nats.connect_failed",
             {{"server", servers}, {"attempt", attempt}, {"reason", why}, {"retry_ms", delay.count()}},
             "nats: cannot reach {} (attempt {}): {}{}; retrying in {}ms", servers, attempt, why, verdict.message,
             delay.count());
    io_.run_for(delay);  // handles signals meanwhile
    io_.restart();
    if (stopping()) return false;
    delay = std::min(delay * 2, config_.nats.retry_max);
  }
}

void JetStreamReader::subscribe() {
  JETFAN_ON_IO_THREAD(thread_);
  natsInbox* raw_inbox = nullptr;
  if (natsInbox_Create(&raw_inbox) != NATS_OK) throw StartupError(kExitSoftware, "nats: cannot create an inbox");
  NatsInboxPtr inbox(raw_inbox);
  inbox_ = std::string(inbox.get()) + ".";
  const natsStatus status = subscribe_inbox();
  if (status != NATS_OK) throw StartupError(kExitUnavailable, "nats: cannot subscribe: " + nats_last_error(status));
}

natsStatus JetStreamReader::subscribe_inbox() {
  natsSubscription* raw = nullptr;
  const std::string wildcard = inbox_ + "*";
  // Synchronous: cnats queues what it routes to it while the io thread reads; on_read() takes it.
  const natsStatus status = natsConnection_SubscribeSync(&raw, connection_.get(), wildcard.c_str());
  if (status != NATS_OK) return status;
  subscription_.reset(raw);
  // Pull credit, not the client's queue, bounds what can be waiting here.
  natsSubscription_SetPendingLimits(raw, -1, -1);
  return NATS_OK;
}

void JetStreamReader::listen(UpstreamListener* listener) {
  JETFAN_ON_IO_THREAD(thread_);
  listener_ = listener;
}

bool JetStreamReader::send_pull(const PullRequest& request) {
  JETFAN_ON_IO_THREAD(thread_);
  if (!connection_) return false;
  using std::chrono::nanoseconds;
  const std::string reply = inbox_ + std::to_string(request.id);
  request_body_.assign("{\"batch\":").append(std::to_string(request.batch));
  if (request.max_bytes > 0) request_body_.append(",\"max_bytes\":").append(std::to_string(request.max_bytes));
  request_body_.append(",\"expires\":").append(std::to_string(nanoseconds(request.expires).count()));
  if (request.idle_heartbeat.count() > 0) {
    request_body_.append(",\"idle_heartbeat\":").append(std::to_string(nanoseconds(request.idle_heartbeat).count()));
  }
  // A group's name and a pin id are the server's tokens ([A-Za-z0-9_-/=], nuids): nothing to escape.
  if (!request.group.empty()) request_body_.append(",\"group\":\"").append(request.group).push_back('"');
  if (!request.pin_id.empty()) request_body_.append(",\"id\":\"").append(request.pin_id).push_back('"');
  request_body_.push_back('}');
  const natsStatus status = natsConnection_PublishRequest(connection_.get(), pull_subject_.c_str(), reply.c_str(),
                                                          request_body_.data(), static_cast<int>(request_body_.size()));
  if (status != NATS_OK) {
    const std::string why = nats_last_error(status);
    log_warn("nats.pull_failed", {{"reason", why}}, "nats: pull request failed: {}; retrying shortly", why);
    return false;
  }
  log_trace("nats.pull", {{"request", request.id}, {"batch", request.batch}}, "nats: pull request {} for {} message(s)",
            request.id, request.batch);
  return true;
}

void JetStreamReader::on_callbacks() {
  JETFAN_ON_IO_THREAD(thread_);
  std::vector<CnatsCallbacks::Link> links;
  std::vector<CnatsCallbacks::Published> published;
  std::vector<CnatsCallbacks::Api> api;
  {
    std::lock_guard lock(callbacks_->mutex);
    links.swap(callbacks_->links);
    published.swap(callbacks_->published);
    api.swap(callbacks_->api);
    for (NatsMsgPtr& message : callbacks_->spent) spent_.add(std::move(message));
    callbacks_->spent.clear();
    callbacks_->posted = false;
  }
  if (!listener_ || (links.empty() && published.empty() && api.empty())) return;
  for (const auto& link : links) {
    if (!listener_) return;
    if (link.up) {
      if (renew_due_) {
        renew_due_ = false;
        if (!renew()) {
          renew_later();
          break;
        }
        listener_->on_reconnected();
        break;  // what else the old connection reported is its own
      }
      listener_->on_reconnected();
    } else if (loop_.take_broken_read() || renew_due_) {
      renew_due_ = true;
      listener_->on_disconnected(kProtocolError);
    } else {
      listener_->on_disconnected(link.why);
    }
  }
  for (const auto& answer : published) {
    if (!listener_) return;
    listener_->on_published(answer.id, PublishResult{answer.stored, answer.stream_seq, answer.stream, answer.error,
                                                     answer.duplicate, answer.no_stream});
  }
  for (const auto& answer : api) {
    if (!listener_) return;
    listener_->on_api_reply(answer.id, ApiReply{answer.json, answer.error});
  }
  if (listener_) listener_->on_batch_end();
}

void JetStreamReader::on_read() {
  JETFAN_ON_IO_THREAD(thread_);
  if (!subscription_) return;
  int pending = 0;
  if (natsSubscription_GetPending(subscription_.get(), &pending, nullptr) != NATS_OK || pending <= 0) return;
  bool took = false;
  // A listener may close this reader from inside a callback: nothing more is taken then.
  for (int i = 0; i < pending && subscription_ && listener_; ++i) {
    natsMsg* message = nullptr;
    const natsStatus status = natsSubscription_NextMsg(&message, subscription_.get(), 0);  // 0: never waits
    if (status == NATS_OK) {
      take(NatsMsgPtr(message));
    } else if (status == NATS_NO_RESPONDERS) {
      // cnats destroys a 503 status reply given to NextMsg (its subject, the pull, with it): it is
      // handed on as a status of no pull, so the dispatcher still hears that nobody answered.
      listener_->on_pull_status(PullStatus{0, "503", "No Responders"});
    } else {
      break;
    }
    took = true;
  }
  if (took && listener_) listener_->on_batch_end();
}

void JetStreamReader::take(NatsMsgPtr message) {
  natsMsg* raw = message.get();
  const char* reply = natsMsg_GetReply(raw);
  const std::string_view subject = natsMsg_GetSubject(raw);
  if (reply && std::strncmp(reply, "$JS.ACK.", 8) == 0) {
    InboundMessage in;
    const auto ack = jetstream::parse_ack_subject(reply);
    const auto key = jetstream::key_of(subject, config_.key.strip_prefix);
    in.routable = ack && key;
    if (ack) {
      in.stream_seq = ack->stream_seq;
      in.deliveries = ack->deliveries;
      in.consumer_seq = ack->consumer_seq;
      in.published_ns = ack->published_ns;
    }
    if (key) in.key = *key;
    const std::string_view payload(natsMsg_GetData(raw), static_cast<std::size_t>(natsMsg_GetDataLength(raw)));
    MessageParts parts{BytesOwner(message.release(), destroy_message), subject, reply, {}, payload};
    // Unroutable ones too: the first delivery to a pinned client carries its pin id in a header.
    find_headers(raw, parts);
    in.bytes = make_message_bytes(std::move(parts), arena_);
    listener_->on_message(std::move(in));
    return;
  }
  // Replies come on the request's own reply subject: <inbox>.<pull> or <inbox>.p<probe>.
  const std::string_view token = subject.size() > inbox_.size() ? subject.substr(inbox_.size()) : std::string_view();
  const char* code = nullptr;
  natsMsgHeader_Get(raw, "Status", &code);
  if (!token.empty() && token[0] == 'p') {
    const std::string_view body(natsMsg_GetData(raw), static_cast<std::size_t>(natsMsg_GetDataLength(raw)));
    listener_->on_probe_answer(code == nullptr && !body.empty() && !jetstream::parse_api_error(body));
    return;
  }
  PullStatus status;
  std::from_chars(token.data(), token.data() + token.size(), status.pull);
  const char* description = nullptr;
  natsMsgHeader_Get(raw, "Description", &description);
  status.code = code ? code : "";
  status.description = description ? description : "";
  listener_->on_pull_status(status);
}

void JetStreamReader::find_headers(natsMsg* raw, MessageParts& parts) {
  auto rebuild = [&] {
    std::string block = header_block(raw);
    if (!block.empty()) parts.made_headers = std::move(block);
  };
  if (header_layout_ == HeaderLayout::kRebuild) {
    rebuild();
    return;
  }
  // Subject, NUL, reply subject, NUL, [header block, NUL,] payload: the gap is read only when the
  // first two sit so, and it lies between the reply subject and the payload.
  const auto at = [](const char* pointer) { return reinterpret_cast<std::uintptr_t>(pointer); };
  const std::uintptr_t after_reply = at(parts.reply.data()) + parts.reply.size() + 1;
  const std::uintptr_t payload = at(parts.payload.data());
  HeaderGap gap{HeaderGap::Kind::kUnknown, {}};
  if (at(parts.subject.data()) + parts.subject.size() + 1 == at(parts.reply.data()) && after_reply <= payload &&
      payload - after_reply <= kMaxHeaderGap) {
    gap = read_header_gap(std::string_view(parts.reply.data() + parts.reply.size() + 1, payload - after_reply));
  }
  switch (gap.kind) {
    case HeaderGap::Kind::kNone:
      // Until a block has been found where the layout says, a message without one is asked too.
      if (header_layout_ == HeaderLayout::kUnchecked && !parsed_fields(raw).empty()) {
        header_layout_ = HeaderLayout::kRebuild;
        log_warn("nats.header_layout", {{"cnats", client_version()}, {"subject", parts.subject}},
                 "nats: a message on {} has headers where jetfan found none in the bytes the NATS client library "
                 "(cnats {}) keeps for it: every header block is passed on rebuilt from cnats's parse from now on "
                 "(fields by name, a value cut at a NUL byte, a status line as Status and Description fields)",
                 parts.subject, client_version());
        rebuild();
      }
      return;
    case HeaderGap::Kind::kBlock: {
      if (header_layout_ == HeaderLayout::kChecked) {
        parts.headers = gap.block;
        return;
      }
      std::string copy(gap.block);  // cnats's parse, which the check asks for, writes over the block
      switch (agrees_with_parse(copy, parsed_fields(raw))) {
        case Agreement::kAgrees:
          header_layout_ = HeaderLayout::kChecked;
          log_debug("nats.header_layout", {{"cnats", client_version()}},
                    "nats: header blocks are passed on as received (checked against cnats {}'s parse)",
                    client_version());
          parts.made_headers = std::move(copy);
          return;
        case Agreement::kCannotTell:
          parts.made_headers = std::move(copy);
          return;
        case Agreement::kDisagrees:
          header_layout_ = HeaderLayout::kRebuild;
          log_warn("nats.header_layout", {{"cnats", client_version()}, {"subject", parts.subject}},
                   "nats: the header block jetfan found in a message on {} does not agree with the NATS client "
                   "library's parse of it (cnats {}): every header block is passed on rebuilt from cnats's parse "
                   "from now on (fields by name, a value cut at a NUL byte, a status line as Status and Description "
                   "fields)",
                   parts.subject, client_version());
          rebuild();
          return;
      }
      return;
    }
    case HeaderGap::Kind::kParsed:
      if (!told_parsed_) {
        told_parsed_ = true;
        log_warn("nats.headers_parsed", {{"cnats", client_version()}, {"subject", parts.subject}},
                 "nats: a message on {} has headers and an empty payload, and the NATS client library (cnats {}) "
                 "parsed its header block in place before handing it over: the header blocks of such messages are "
                 "passed on rebuilt from cnats's parse (fields by name, a value cut at a NUL byte, a status line as "
                 "Status and Description fields). Logged once.",
                 parts.subject, client_version());
      }
      rebuild();
      return;
    case HeaderGap::Kind::kUnknown:
      if (!told_unknown_) {
        told_unknown_ = true;
        log_warn("nats.header_layout", {{"cnats", client_version()}, {"subject", parts.subject}},
                 "nats: the header block of a message on {} is not where jetfan expects the NATS client library "
                 "(cnats {}) to keep it, or does not start with NATS/1.0: it is passed on rebuilt from cnats's parse, "
                 "and so is every such block. Logged once.",
                 parts.subject, client_version());
      }
      rebuild();
      return;
  }
}

void JetStreamReader::wait_off_thread(const std::function<void()>& call, Duration timeout) {
  std::atomic<bool> done{false};
  std::thread waiter([&] {
    call();
    done = true;
  });
  const auto deadline = timeout.count() > 0 ? std::chrono::steady_clock::now() + timeout + Duration(1000)
                                            : std::chrono::steady_clock::time_point::max();
  loop_.drive_until([&] { return done.load(); }, deadline);
  waiter.join();  // cnats's own timeout ends the call
}

bool JetStreamReader::send_probe(std::uint64_t id) {
  JETFAN_ON_IO_THREAD(thread_);
  if (!connection_) return false;
  const std::string reply = inbox_ + "p" + std::to_string(id);
  return natsConnection_PublishRequest(connection_.get(), info_subject_.c_str(), reply.c_str(), "", 0) == NATS_OK;
}

void JetStreamReader::reply(const MessageBytes& message, const char* body, std::size_t length) {
  JETFAN_ON_IO_THREAD(thread_);
  if (!connection_) return;
  // The reply subject is the natsMsg's own, NUL-terminated: every MessageBytes this reader is
  // asked about is one it made.
  const char* subject = message.reply().data();
  const natsStatus status = natsConnection_Publish(connection_.get(), subject, body, static_cast<int>(length));
  if (status != NATS_OK) {
    // The server will redeliver after AckWait: at least once, never lost.
    const std::string why = nats_last_error(status);
    log_warn("nats.ack_send_failed", {{"subject", subject}, {"ack", std::string_view(body, length)}, {"reason", why}},
             "nats: could not send \"{}\" to {}: {}", std::string_view(body, length), subject, why);
  }
}

void JetStreamReader::ack(const MessageBytes& message) { reply(message, "+ACK", 4); }
void JetStreamReader::term(const MessageBytes& message) { reply(message, "+TERM", 5); }
void JetStreamReader::wip(const MessageBytes& message) { reply(message, "+WPI", 4); }
void JetStreamReader::nak(const MessageBytes& message, Duration delay) {
  if (delay.count() <= 0) {
    reply(message, "-NAK", 4);
    return;
  }
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(delay).count();
  const std::string body = "-NAK {\"delay\":" + std::to_string(ns) + "}";
  reply(message, body.data(), body.size());
}

bool JetStreamReader::publish(std::uint64_t id, std::string_view subject, std::string_view headers,
                              std::string_view payload) {
  JETFAN_ON_IO_THREAD(thread_);
  if (!answer_subscription()) return false;
  const std::string reply = publish_inbox_ + std::to_string(id);
  natsMsg* raw = nullptr;
  if (natsMsg_Create(&raw, std::string(subject).c_str(), reply.c_str(), payload.data(),
                     static_cast<int>(payload.size())) != NATS_OK) {
    return false;
  }
  NatsMsgPtr message(raw);
  set_headers(raw, headers);
  const natsStatus status = natsConnection_PublishMsg(connection_.get(), raw);
  spent_.add(std::move(message));
  if (status != NATS_OK) {
    const std::string why = nats_last_error(status);
    log_warn("nats.publish_failed", {{"subject", subject}, {"reason", why}}, "nats: could not publish to {}: {}",
             subject, why);
    return false;
  }
  return true;
}

bool JetStreamReader::answer_subscription() {
  if (!connection_) return false;
  if (publish_subscription_) return true;
  natsInbox* raw_inbox = nullptr;
  if (natsInbox_Create(&raw_inbox) != NATS_OK) return false;
  NatsInboxPtr inbox(raw_inbox);
  publish_inbox_ = std::string(inbox.get()) + ".";
  natsSubscription* raw = nullptr;
  const std::string wildcard = publish_inbox_ + "*";
  if (natsConnection_Subscribe(&raw, connection_.get(), wildcard.c_str(), on_publish_answer, callbacks_.get()) !=
      NATS_OK) {
    const std::string why = nats_last_error(NATS_ERR);
    log_warn("nats.subscribe_failed", {{"reason", why}}, "nats: cannot subscribe for publish acknowledgements: {}",
             why);
    return false;
  }
  publish_subscription_.reset(raw);
  return true;
}

std::size_t JetStreamReader::max_payload() const {
  // cnats keeps the server's INFO under the connection's lock: safe from any thread.
  const std::int64_t bytes = connection_ ? natsConnection_GetMaxPayload(connection_.get()) : 0;
  return bytes > 0 ? static_cast<std::size_t>(bytes) : 0;
}

bool JetStreamReader::api_request(std::uint64_t id, std::string_view subject, std::string_view body) {
  JETFAN_ON_IO_THREAD(thread_);
  if (!answer_subscription()) return false;
  const std::string reply = publish_inbox_ + "a" + std::to_string(id);
  const natsStatus status = natsConnection_PublishRequest(connection_.get(), std::string(subject).c_str(),
                                                          reply.c_str(), body.data(), static_cast<int>(body.size()));
  if (status != NATS_OK) {
    const std::string why = nats_last_error(status);
    log_warn("nats.request_failed", {{"subject", subject}, {"reason", why}}, "nats: could not send a request to {}: {}",
             subject, why);
    return false;
  }
  return true;
}

void JetStreamReader::close(Duration timeout) {
  JETFAN_ON_IO_THREAD(thread_);
  listener_ = nullptr;
  renew_timer_.cancel();
  callbacks_->closing = true;
  if (subscription_) natsSubscription_Unsubscribe(subscription_.get());
  if (publish_subscription_) natsSubscription_Unsubscribe(publish_subscription_.get());
  if (connection_) {
    natsConnection* connection = connection_.get();
    // The PONG that ends the flush is read by this thread: the flush waits on another.
    wait_off_thread([connection, timeout] { natsConnection_FlushTimeout(connection, timeout.count()); }, timeout);
    natsConnection_Close(connection);  // cnats detaches from the loop before it returns
  }
  loop_.shutdown();  // the socket is no longer polled
  // The subscription goes only after the connection is closed. cnats 3.4.1 routes a message to its
  // subscription without holding a reference to it (natsConn_processMsg; fixed upstream in nats.c
  // #638): with cnats's own read loop thread that was a use-after-free on SIGTERM. Messages are now
  // routed on this thread, but the order stays the one that is safe whoever reads.
  subscription_.reset();
  publish_subscription_.reset();
  connection_.reset();
}

// cnats 3.4.1, reading through an external event loop, creates its protocol parser once
// (natsConnection_ProcessReadEvent) and never resets it: only its own read loop thread destroys it
// when a connection ends. After a protocol error (a MSG line it cannot split, as a subject with a CR
// makes) the parser stays in the middle of that line, with offsets into a buffer long gone, and
// every reconnected connection breaks at the first message the server sends it: seen against
// nats-server 2.9.10 as a reconnect every reconnect_wait, for ever. A new natsConnection has a new
// parser. The old one is closed first (one connection on the event loop at a time); its callbacks
// object goes with it, so nothing it reports late reaches this reader.
bool JetStreamReader::renew() {
  JETFAN_ON_IO_THREAD(thread_);
  callbacks_->closing = true;
  callbacks_->reader = nullptr;
  if (connection_) natsConnection_Close(connection_.get());
  subscription_.reset();  // after the close, as in close()
  publish_subscription_.reset();
  connection_.reset();
  callbacks_ = std::make_shared<CnatsCallbacks>(io_);
  callbacks_->reader = this;
  const auto options = make_options();
  natsConnection* raw = nullptr;
  natsStatus status = natsConnection_Connect(&raw, options.get());
  if (status == NATS_OK) {
    connection_.reset(raw);
    std::lock_guard lock(callbacks_->held_mutex);
    if (!callbacks_->connection_closed) callbacks_->held_by_connection = callbacks_;
  }
  if (status == NATS_OK) status = subscribe_inbox();
  if (status != NATS_OK) {
    const std::string why = nats_last_error(status);
    log_warn("nats.renew_failed", {{"reason", why}, {"retry_ms", config_.nats.reconnect_wait.count()}},
             "nats: could not make a new connection: {}; trying again in {}ms", why,
             config_.nats.reconnect_wait.count());
    return false;
  }
  loop_.take_broken_read();  // a break of the old connection's, if any, is over with it
  log_warn("nats.renewed", {{"reason", "protocol error"}},
           "nats: the client dropped the connection while reading what the server sent, and would keep the "
           "broken read's state on every reconnect (cnats 3.4.1 with an event loop): made a new connection");
  return true;
}

void JetStreamReader::renew_later() {
  renew_timer_.expires_after(config_.nats.reconnect_wait);
  renew_timer_.async_wait([this](const boost::system::error_code& error) {
    if (error || !listener_) return;
    if (!renew()) {
      renew_later();
      return;
    }
    listener_->on_reconnected();
    listener_->on_batch_end();
  });
}

}  // namespace jetfan
