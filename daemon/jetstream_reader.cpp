#include "jetstream_reader.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/post.hpp>

#include <atomic>
#include <charconv>
#include <cstring>
#include <mutex>
#include <thread>

#include "jetstream_subject.hpp"
#include "nats_auth.hpp"
#include "startup_error.hpp"

namespace jetfan {
namespace asio = boost::asio;

// What cnats's connection callbacks hand to the io_context thread (messages do not come this way:
// the io thread reads them itself). cnats holds a raw pointer to it; `held_by_connection` is the
// reference that pointer stands for, dropped in the closed callback.
struct JetStreamReader::Ingress : std::enable_shared_from_this<Ingress> {
  explicit Ingress(asio::io_context& context) : io(context) {}

  void push_reconnected() {
    std::lock_guard lock(mutex);
    reconnected = true;
    post_locked();
  }
  void post_locked() {
    if (posted) return;
    posted = true;
    asio::post(io, [self = shared_from_this()] {
      if (self->reader) self->reader->on_ingress();
    });
  }
  asio::io_context& io;
  std::mutex mutex;
  bool reconnected = false;
  bool posted = false;
  std::atomic<bool> closing{false};             // set before an intended close, read by cnats threads
  JetStreamReader* reader = nullptr;            // read and cleared on the io thread only
  std::shared_ptr<Ingress> held_by_connection;  // until its closed callback
  std::mutex held_mutex;                        // guards the one above
  bool connection_closed = false;               // the closed callback already ran
};

namespace {

using Ingress = JetStreamReader::Ingress;

std::string last_error(natsStatus status) {
  natsStatus ignored;
  const char* detail = nats_GetLastError(&ignored);
  std::string text = natsStatus_GetText(status);
  if (detail && *detail && text != detail) text += ": " + std::string(detail);
  return text;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ",") + redact_url(item);  // for logs
  return out;
}

void on_disconnected(natsConnection*, void* closure) {
  if (static_cast<Ingress*>(closure)->closing) return;
  spdlog::warn("nats: disconnected; reconnecting. Messages held and in flight are kept.");
}
void on_reconnected(natsConnection* connection, void* closure) {
  auto* ingress = static_cast<Ingress*>(closure);
  if (ingress->closing) return;
  char url[256] = {0};
  natsConnection_GetConnectedUrl(connection, url, sizeof url);
  spdlog::info("nats: reconnected to {}; pulling anew", redact_url(url));
  ingress->push_reconnected();
}
// cnats calls this when it will call no more with this pointer. The reference it takes out may be
// the last, and the mutex goes with the Ingress: it is dropped after the lock is released.
void on_closed(natsConnection*, void* closure) {
  auto* ingress = static_cast<Ingress*>(closure);
  std::shared_ptr<Ingress> last;
  {
    std::lock_guard lock(ingress->held_mutex);
    ingress->connection_closed = true;
    last.swap(ingress->held_by_connection);
  }
}
void on_async_error(natsConnection*, natsSubscription*, natsStatus status, void* closure) {
  if (static_cast<Ingress*>(closure)->closing) return;
  spdlog::error("nats: asynchronous error: {}", natsStatus_GetText(status));
}

}  // namespace

JetStreamReader::JetStreamReader(asio::io_context& io, const Config& config)
    : io_(io), config_(config), ingress_(std::make_shared<Ingress>(io)), loop_(io) {
  ingress_->reader = this;
  loop_.on_read([this] { on_read(); });
  pull_subject_ = pull_subject(config.consumer.stream, config.consumer.durable);
  info_subject_ = "$JS.API.CONSUMER.INFO." + config.consumer.stream + "." + config.consumer.durable;
}

JetStreamReader::~JetStreamReader() {
  close(Duration(1000));
  ingress_->reader = nullptr;
}

NatsOptionsPtr JetStreamReader::make_options() {
  const auto& nats = config_.nats;
  natsOptions* raw = nullptr;
  if (natsOptions_Create(&raw) != NATS_OK) throw StartupError(kExitSoftware, "nats: cannot create options");
  NatsOptionsPtr options(raw);
  std::vector<const char*> servers;
  for (const auto& server : nats.servers) servers.push_back(server.c_str());
  auto check = [&](natsStatus status, const std::string& what) {
    if (status != NATS_OK) throw StartupError(kExitConfig, config_.file + ": nats." + what + ": " + last_error(status));
  };
  Ingress* closure = ingress_.get();
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
  if (!nats.token.empty()) check(natsOptions_SetToken(raw, nats.token.c_str()), "token");
  if (!nats.user.empty()) check(natsOptions_SetUserInfo(raw, nats.user.c_str(), nats.password.c_str()), "user");
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
        std::lock_guard lock(ingress_->held_mutex);
        if (!ingress_->connection_closed) ingress_->held_by_connection = ingress_;
      }
      spdlog::info("nats: connected to {} as \"{}\"", servers, config_.nats.name);
      return true;
    }
    const std::string why = last_error(status);
    const auto verdict = judge_connect_failure(status, why, config_.nats, config_.file, servers, tls_closed);
    if (verdict.exit_code != 0) throw StartupError(verdict.exit_code, verdict.message);
    tls_closed = verdict.tls_closed;
    spdlog::warn("nats: cannot reach {} (attempt {}): {}{}; retrying in {}ms", servers, attempt, why, verdict.message,
                 delay.count());
    io_.run_for(delay);  // handles signals meanwhile
    io_.restart();
    if (stopping()) return false;
    delay = std::min(delay * 2, config_.nats.retry_max);
  }
}

ConsumerFacts JetStreamReader::bind_consumer() {
  JETFAN_ON_IO_THREAD(thread_);
  const auto& consumer = config_.consumer;
  const std::string named = "consumer \"" + consumer.durable + "\" of stream \"" + consumer.stream + "\"";
  jsCtx* raw_js = nullptr;
  if (natsConnection_JetStream(&raw_js, connection_.get(), nullptr) != NATS_OK) {
    throw StartupError(kExitSoftware, "nats: cannot create a JetStream context");
  }
  JsCtxPtr js(raw_js);
  jsConsumerInfo* raw_info = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  natsStatus status = NATS_OK;
  std::string why;  // cnats's error text is per thread: taken where the call ran
  const auto call = [&] {
    status = js_GetConsumerInfo(&raw_info, js.get(), consumer.stream.c_str(), consumer.durable.c_str(), nullptr, &code);
    if (status != NATS_OK) why = last_error(status);
  };
  wait_off_thread(call, Duration(0));
  JsConsumerInfoPtr info(raw_info);
  ConsumerFacts facts;
  if (status == NATS_NOT_FOUND) {
    throw StartupError(kExitConfig, config_.file + ": consumer: " + named + " does not exist (" + why +
                                        "). jetfan binds the module's existing durable consumer and never creates "
                                        "one; its controller creates it.");
  }
  if (status == NATS_NO_RESPONDERS) {
    throw StartupError(kExitTempFail, "nats: JetStream does not answer on " + join(config_.nats.servers) +
                                          " (no responders for the info of " + named +
                                          "): is JetStream enabled there, and has the server finished starting? "
                                          "Exiting with 75 (a temporary failure), so that systemd starts jetfan again "
                                          "after a delay.");
  }
  if (status != NATS_OK) {
    // Most often the account may not read consumer info (the request then times out).
    spdlog::warn("nats: cannot read the info of {}: {}", named, why);
    return facts;
  }
  const jsConsumerConfig& server = *info->Config;
  if (server.DeliverSubject && *server.DeliverSubject) {
    throw StartupError(kExitConfig, config_.file + ": consumer: " + named + " is a push consumer (deliver subject \"" +
                                        server.DeliverSubject + "\"); jetfan reads a pull consumer");
  }
  facts.from_server = true;
  facts.ack_policy = server.AckPolicy == js_AckNone  ? AckPolicy::kNone
                     : server.AckPolicy == js_AckAll ? AckPolicy::kAll
                                                     : AckPolicy::kExplicit;
  if (server.AckWait > 0) {
    facts.ack_wait = std::chrono::duration_cast<Duration>(std::chrono::nanoseconds(server.AckWait));
  }
  facts.max_deliver = server.MaxDeliver;
  facts.max_ack_pending = server.MaxAckPending;
  facts.filter = server.FilterSubject ? server.FilterSubject : "";
  facts.num_pending = info->NumPending;
  return facts;
}

void JetStreamReader::subscribe(IngressHandler handler) {
  JETFAN_ON_IO_THREAD(thread_);
  handler_ = std::move(handler);
  natsInbox* raw_inbox = nullptr;
  if (natsInbox_Create(&raw_inbox) != NATS_OK) throw StartupError(kExitSoftware, "nats: cannot create an inbox");
  NatsInboxPtr inbox(raw_inbox);
  inbox_ = std::string(inbox.get()) + ".";
  natsSubscription* raw = nullptr;
  const std::string wildcard = inbox_ + "*";
  // Synchronous: cnats queues what it routes to it while the io thread reads; on_read() takes it.
  const natsStatus status = natsConnection_SubscribeSync(&raw, connection_.get(), wildcard.c_str());
  if (status != NATS_OK) throw StartupError(kExitUnavailable, "nats: cannot subscribe: " + last_error(status));
  subscription_.reset(raw);
  // Pull credit, not the client's queue, bounds what can be waiting here.
  natsSubscription_SetPendingLimits(raw, -1, -1);
}

void JetStreamReader::stop_delivering() {
  JETFAN_ON_IO_THREAD(thread_);
  handler_ = nullptr;
}

bool JetStreamReader::send_pull(const PullRequest& request) {
  JETFAN_ON_IO_THREAD(thread_);
  if (!connection_) return false;
  using std::chrono::nanoseconds;
  const std::string reply = inbox_ + std::to_string(request.id);
  request_body_.assign("{\"batch\":").append(std::to_string(request.batch));
  if (request.max_bytes > 0) request_body_.append(",\"max_bytes\":").append(std::to_string(request.max_bytes));
  request_body_.append(",\"expires\":").append(std::to_string(nanoseconds(request.expires).count()));
  request_body_.append(",\"idle_heartbeat\":").append(std::to_string(nanoseconds(request.idle_heartbeat).count()));
  request_body_.push_back('}');
  const natsStatus status = natsConnection_PublishRequest(connection_.get(), pull_subject_.c_str(), reply.c_str(),
                                                          request_body_.data(), static_cast<int>(request_body_.size()));
  if (status != NATS_OK) {
    spdlog::warn("nats: pull request failed: {}; retrying shortly", last_error(status));
    return false;
  }
  spdlog::trace("nats: pull request {} for {} message(s)", request.id, request.batch);
  return true;
}

void JetStreamReader::on_ingress() {
  JETFAN_ON_IO_THREAD(thread_);
  bool reconnected = false;
  {
    std::lock_guard lock(ingress_->mutex);
    reconnected = std::exchange(ingress_->reconnected, false);
    ingress_->posted = false;
  }
  if (!reconnected || !handler_) return;
  incoming_.clear();
  handler_(incoming_, true);
}

void JetStreamReader::on_read() {
  JETFAN_ON_IO_THREAD(thread_);
  if (!subscription_) return;
  int pending = 0;
  if (natsSubscription_GetPending(subscription_.get(), &pending, nullptr) != NATS_OK || pending <= 0) return;
  incoming_.clear();
  for (int i = 0; i < pending; ++i) {
    natsMsg* message = nullptr;
    const natsStatus status = natsSubscription_NextMsg(&message, subscription_.get(), 0);  // 0: never waits
    if (status == NATS_OK) {
      incoming_.emplace_back(message);
    } else if (status == NATS_NO_RESPONDERS) {
      // cnats destroys a 503 status reply given to NextMsg (its subject, the pull, with it): it is
      // handed on as a status of no pull, so the dispatcher still hears that nobody answered.
      if (auto status_reply = no_responders_status()) incoming_.push_back(std::move(status_reply));
    } else {
      break;
    }
  }
  if (info_outstanding_ > 0) take_info_replies();
  if (handler_ && !incoming_.empty()) handler_(incoming_, false);
}

NatsMsgPtr JetStreamReader::no_responders_status() const {
  natsMsg* raw = nullptr;
  const std::string subject = inbox_ + "0";
  if (natsMsg_Create(&raw, subject.c_str(), nullptr, nullptr, 0) != NATS_OK) return nullptr;
  NatsMsgPtr message(raw);
  natsMsgHeader_Set(raw, "Status", "503");
  natsMsgHeader_Set(raw, "Description", "No Responders");
  return message;
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

void JetStreamReader::on_consumer_info(InfoHandler handler) {
  JETFAN_ON_IO_THREAD(thread_);
  info_handler_ = std::move(handler);
}

bool JetStreamReader::request_consumer_info(std::uint64_t id) {
  JETFAN_ON_IO_THREAD(thread_);
  if (!connection_ || inbox_.empty()) return false;
  // Answers come on the inbox's subscription, as "<inbox>.i<id>": pull requests use bare numbers.
  const std::string reply = inbox_ + "i" + std::to_string(id);
  if (natsConnection_PublishRequest(connection_.get(), info_subject_.c_str(), reply.c_str(), "", 0) != NATS_OK)
    return false;
  ++info_outstanding_;
  return true;
}

// Consumer info answers share the inbox with pull status replies; they are taken out here, before
// the ingress handler sees the batch. Batches are walked only while an answer is awaited (the
// server answers every request it gets), so messages pay nothing for this otherwise.
void JetStreamReader::take_info_replies() {
  std::size_t kept = 0;
  for (std::size_t i = 0; i < incoming_.size(); ++i) {
    natsMsg* message = incoming_[i].get();
    const char* reply = natsMsg_GetReply(message);
    const std::string_view subject = natsMsg_GetSubject(message);
    const bool info = !(reply && std::strncmp(reply, "$JS.ACK.", 8) == 0) && subject.size() > inbox_.size() &&
                      subject.compare(0, inbox_.size(), inbox_) == 0 && subject[inbox_.size()] == 'i';
    if (!info) {
      if (kept != i) incoming_[kept] = std::move(incoming_[i]);
      ++kept;
      continue;
    }
    if (info_outstanding_ > 0) --info_outstanding_;
    std::uint64_t id = 0;
    const auto token = subject.substr(inbox_.size() + 1);
    std::from_chars(token.data(), token.data() + token.size(), id);
    if (info_handler_) {
      info_handler_(
          id, std::string_view(natsMsg_GetData(message), static_cast<std::size_t>(natsMsg_GetDataLength(message))));
    }
  }
  incoming_.resize(kept);
}

Incoming JetStreamReader::classify(natsMsg* message) const {
  Incoming in;
  const char* reply = natsMsg_GetReply(message);
  if (reply && std::strncmp(reply, "$JS.ACK.", 8) == 0) return in;
  // Replies come on the request's own reply subject: <inbox>.<pull> or <inbox>.p<probe>.
  const std::string_view subject = natsMsg_GetSubject(message);
  const std::string_view token = subject.size() > inbox_.size() ? subject.substr(inbox_.size()) : std::string_view();
  const char* code = nullptr;
  natsMsgHeader_Get(message, "Status", &code);
  if (!token.empty() && token[0] == 'p') {
    in.kind = Incoming::Kind::kProbeAnswer;
    const std::string_view body(natsMsg_GetData(message), static_cast<std::size_t>(natsMsg_GetDataLength(message)));
    in.answered = code == nullptr && !body.empty() && body.find("\"error\"") == std::string_view::npos;
    return in;
  }
  in.kind = Incoming::Kind::kPullStatus;
  std::from_chars(token.data(), token.data() + token.size(), in.status.pull);
  const char* description = nullptr;
  natsMsgHeader_Get(message, "Description", &description);
  in.status.code = code ? code : "";
  in.status.description = description ? description : "";
  return in;
}

bool JetStreamReader::send_probe(std::uint64_t id) {
  JETFAN_ON_IO_THREAD(thread_);
  if (!connection_) return false;
  const std::string reply = inbox_ + "p" + std::to_string(id);
  return natsConnection_PublishRequest(connection_.get(), info_subject_.c_str(), reply.c_str(), "", 0) == NATS_OK;
}

void JetStreamReader::reply(natsMsg* message, const char* body, std::size_t length) {
  JETFAN_ON_IO_THREAD(thread_);
  if (!connection_) return;
  const char* subject = natsMsg_GetReply(message);
  const natsStatus status = natsConnection_Publish(connection_.get(), subject, body, static_cast<int>(length));
  if (status != NATS_OK) {
    // The server will redeliver after AckWait: at least once, never lost.
    spdlog::warn("nats: could not send \"{}\" to {}: {}", std::string_view(body, length), subject, last_error(status));
  }
}

void JetStreamReader::ack(natsMsg* message) { reply(message, "+ACK", 4); }
void JetStreamReader::term(natsMsg* message) { reply(message, "+TERM", 5); }
void JetStreamReader::wip(natsMsg* message) { reply(message, "+WPI", 4); }
void JetStreamReader::nak(natsMsg* message, Duration delay) {
  if (delay.count() <= 0) {
    reply(message, "-NAK", 4);
    return;
  }
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(delay).count();
  const std::string body = "-NAK {\"delay\":" + std::to_string(ns) + "}";
  reply(message, body.data(), body.size());
}

void JetStreamReader::close(Duration timeout) {
  JETFAN_ON_IO_THREAD(thread_);
  handler_ = nullptr;
  ingress_->closing = true;
  if (subscription_) natsSubscription_Unsubscribe(subscription_.get());
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
  connection_.reset();
}

}  // namespace jetfan
