#include "jetstream_reader.hpp"

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include <charconv>
#include <atomic>
#include <mutex>

#include "jetstream_subject.hpp"
#include "startup_error.hpp"

namespace jetfan {
namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

// What cnats threads hand to the io_context thread. Shared so that a post already queued when the
// reader goes away finds it gone rather than dangling.
struct JetStreamReader::Ingress : std::enable_shared_from_this<Ingress> {
  explicit Ingress(asio::io_context& context) : io(context) {}

  void push_message(natsMsg* message) {
    std::lock_guard lock(mutex);
    messages.emplace_back(message);
    post_locked();
  }
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
  std::vector<NatsMsgPtr> messages;
  bool reconnected = false;
  bool posted = false;
  std::atomic<bool> closing{false};   // set before an intended close, read by cnats threads
  JetStreamReader* reader = nullptr;  // read and cleared on the io thread only
};

namespace {

std::string last_error(natsStatus status) {
  natsStatus ignored;
  const char* detail = nats_GetLastError(&ignored);
  std::string text = natsStatus_GetText(status);
  if (detail && *detail && text != detail) text += ": " + std::string(detail);
  return text;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ",") + item;
  return out;
}

void on_message(natsConnection*, natsSubscription*, natsMsg* message, void* closure) {
  static_cast<JetStreamReader::Ingress*>(closure)->push_message(message);
}
void on_disconnected(natsConnection*, void* closure) {
  if (static_cast<JetStreamReader::Ingress*>(closure)->closing) return;
  spdlog::warn("nats: disconnected; reconnecting. Messages held and in flight are kept.");
}
void on_reconnected(natsConnection* connection, void* closure) {
  char url[256] = {0};
  natsConnection_GetConnectedUrl(connection, url, sizeof url);
  spdlog::info("nats: reconnected to {}; pulling anew", url);
  static_cast<JetStreamReader::Ingress*>(closure)->push_reconnected();
}
void on_async_error(natsConnection*, natsSubscription*, natsStatus status, void*) {
  spdlog::error("nats: asynchronous error: {}", natsStatus_GetText(status));
}

}  // namespace

JetStreamReader::JetStreamReader(asio::io_context& io, const Config& config)
    : io_(io), config_(config), ingress_(std::make_shared<Ingress>(io)) {
  ingress_->reader = this;
  pull_subject_ = pull_subject(config.consumer.stream, config.consumer.durable);
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
  check(natsOptions_SetServers(raw, servers.data(), static_cast<int>(servers.size())), "servers");
  check(natsOptions_SetName(raw, nats.name.c_str()), "name");
  check(natsOptions_SetTimeout(raw, nats.connect_timeout.count()), "connect_timeout");
  check(natsOptions_SetMaxReconnect(raw, -1), "reconnect");
  check(natsOptions_SetReconnectWait(raw, nats.reconnect_wait.count()), "reconnect_wait");
  check(natsOptions_SetReconnectBufSize(raw, 64 * 1024 * 1024), "reconnect buffer");
  check(natsOptions_SetDisconnectedCB(raw, on_disconnected, ingress_.get()), "callbacks");
  check(natsOptions_SetReconnectedCB(raw, on_reconnected, ingress_.get()), "callbacks");
  check(natsOptions_SetErrorHandler(raw, on_async_error, ingress_.get()), "callbacks");
  if (!nats.creds.empty()) check(natsOptions_SetUserCredentialsFromFiles(raw, nats.creds.c_str(), nullptr), "creds");
  if (!nats.nkey_seed.empty()) check(natsOptions_SetNKeyFromSeed(raw, nats.nkey.c_str(), nats.nkey_seed.c_str()), "nkey_seed");
  if (!nats.token.empty()) check(natsOptions_SetToken(raw, nats.token.c_str()), "token");
  if (!nats.user.empty()) check(natsOptions_SetUserInfo(raw, nats.user.c_str(), nats.password.c_str()), "user");
  if (nats.tls) {
    check(natsOptions_SetSecure(raw, true), "tls");
    if (!nats.tls->ca.empty()) check(natsOptions_LoadCATrustedCertificates(raw, nats.tls->ca.c_str()), "tls.ca");
    if (!nats.tls->cert.empty()) {
      check(natsOptions_LoadCertificatesChain(raw, nats.tls->cert.c_str(), nats.tls->key.c_str()), "tls.cert");
    }
  }
  return options;
}

bool JetStreamReader::connect(const std::function<bool()>& stopping) {
  const auto options = make_options();
  const std::string servers = join(config_.nats.servers);
  Duration delay(100);
  for (int attempt = 1;; ++attempt) {
    natsConnection* raw = nullptr;
    const natsStatus status = natsConnection_Connect(&raw, options.get());
    if (status == NATS_OK) {
      connection_.reset(raw);
      spdlog::info("nats: connected to {} as \"{}\"", servers, config_.nats.name);
      return true;
    }
    const std::string why = last_error(status);
    if (status == NATS_CONNECTION_AUTH_FAILED || status == NATS_NOT_PERMITTED) {
      throw StartupError(kExitNoPerm, "nats: " + servers + " refused jetfan's credentials (" + why +
                                          "); check nats.creds, nkey_seed, token or user in " + config_.file +
                                          ". Exiting now: retrying cannot fix this.");
    }
    if (status == NATS_SSL_ERROR) {
      throw StartupError(kExitConfig, "nats: TLS with " + servers + " failed (" + why + "); check nats.tls in " +
                                          config_.file + ". Exiting now: retrying cannot fix this.");
    }
    spdlog::warn("nats: cannot reach {} (attempt {}): {}; retrying in {}ms", servers, attempt, why, delay.count());
    io_.run_for(delay);  // handles signals meanwhile
    io_.restart();
    if (stopping()) return false;
    delay = std::min(delay * 2, config_.nats.retry_max);
  }
}

ConsumerFacts JetStreamReader::bind_consumer() {
  const auto& consumer = config_.consumer;
  const std::string named = "consumer \"" + consumer.durable + "\" of stream \"" + consumer.stream + "\"";
  jsCtx* raw_js = nullptr;
  if (natsConnection_JetStream(&raw_js, connection_.get(), nullptr) != NATS_OK) {
    throw StartupError(kExitSoftware, "nats: cannot create a JetStream context");
  }
  JsCtxPtr js(raw_js);
  jsConsumerInfo* raw_info = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  const natsStatus status = js_GetConsumerInfo(&raw_info, js.get(), consumer.stream.c_str(), consumer.durable.c_str(), nullptr, &code);
  JsConsumerInfoPtr info(raw_info);
  ConsumerFacts facts;
  if (status == NATS_NOT_FOUND) {
    throw StartupError(kExitConfig, config_.file + ": consumer: " + named +
                                        " does not exist (" + last_error(status) +
                                        "). jetfan binds the module's existing durable consumer and never creates one; "
                                        "its controller creates it.");
  }
  if (status != NATS_OK) {
    if (!consumer.ack_policy) {
      throw StartupError(kExitConfig, "nats: cannot read the info of " + named + " (" + last_error(status) +
                                          ") and consumer.ack_policy is not set in " + config_.file +
                                          "; set it to the consumer's policy (explicit, all or none)");
    }
    facts.ack_policy = *consumer.ack_policy;
    spdlog::warn("nats: cannot read the info of {} ({}); using consumer.ack_policy {} from {} and AckWait {}ms",
                 named, last_error(status), to_string(facts.ack_policy), config_.file, facts.ack_wait.count());
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
  if (server.AckWait > 0) facts.ack_wait = std::chrono::duration_cast<Duration>(std::chrono::nanoseconds(server.AckWait));
  facts.max_deliver = server.MaxDeliver;
  facts.max_ack_pending = server.MaxAckPending;
  facts.filter = server.FilterSubject ? server.FilterSubject : "";
  if (consumer.ack_policy && *consumer.ack_policy != facts.ack_policy) {
    spdlog::warn("{}: consumer.ack_policy says {}, but the server says {}; using the server's", config_.file,
                 to_string(*consumer.ack_policy), to_string(facts.ack_policy));
  }
  spdlog::info("nats: bound {}: ack policy {}, AckWait {}ms, MaxDeliver {}, MaxAckPending {}, filter \"{}\", {} pending",
               named, to_string(facts.ack_policy), facts.ack_wait.count(), facts.max_deliver, facts.max_ack_pending,
               facts.filter, info->NumPending);
  return facts;
}

void JetStreamReader::start(MessagesHandler on_messages, std::size_t max_held) {
  on_messages_ = std::move(on_messages);
  max_held_ = max_held;
  natsInbox* raw_inbox = nullptr;
  if (natsInbox_Create(&raw_inbox) != NATS_OK) throw StartupError(kExitSoftware, "nats: cannot create an inbox");
  NatsInboxPtr inbox(raw_inbox);
  inbox_ = std::string(inbox.get()) + ".";
  natsSubscription* raw = nullptr;
  const std::string wildcard = inbox_ + "*";
  const natsStatus status = natsConnection_Subscribe(&raw, connection_.get(), wildcard.c_str(), on_message, ingress_.get());
  if (status != NATS_OK) throw StartupError(kExitUnavailable, "nats: cannot subscribe: " + last_error(status));
  subscription_.reset(raw);
  // Pull credit, not the client's queue, bounds what can be waiting here.
  natsSubscription_SetPendingLimits(raw, -1, -1);
  pulling_ = true;
  last_heard_ = Clock::now();
}

void JetStreamReader::top_up(std::size_t held) {
  if (!pulling_ || !connection_) return;
  const std::size_t batch = static_cast<std::size_t>(config_.consumer.batch);
  const auto expires_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(config_.consumer.pull_expires).count();
  const auto heartbeat_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(config_.consumer.idle_heartbeat).count();
  // Between one and two batches stay requested: the next request is at the server before the
  // current one is used up, and there is one request per batch, not one per message.
  while (requested_ < batch && held + requested_ < max_held_) {
    const std::size_t count = std::min(batch, max_held_ - held - requested_);
    // With a request already waiting, let room gather into a full batch rather than ask for a few.
    if (count < batch && requested_ > 0) return;
    const std::uint64_t id = next_pull_++;
    const std::string reply = inbox_ + std::to_string(id);
    const std::string body = "{\"batch\":" + std::to_string(count) + ",\"expires\":" + std::to_string(expires_ns) +
                             ",\"idle_heartbeat\":" + std::to_string(heartbeat_ns) + "}";
    const natsStatus status = natsConnection_PublishRequest(connection_.get(), pull_subject_.c_str(), reply.c_str(),
                                                            body.data(), static_cast<int>(body.size()));
    if (status != NATS_OK) {
      spdlog::warn("nats: pull request failed: {}; retrying shortly", last_error(status));
      return;
    }
    if (pulls_.empty()) last_heard_ = Clock::now();
    spdlog::trace("nats: pull request {} for {} message(s); {} held", id, count, held);
    pulls_.emplace(id, Pull{count, Clock::now() + config_.consumer.pull_expires});
    requested_ += count;
  }
}

void JetStreamReader::on_ingress() {
  // incoming_ and batch_ are members so their capacity is reused from batch to batch.
  auto& incoming = incoming_;
  auto& batch = batch_;
  incoming.clear();
  batch.clear();
  bool reconnected = false;
  {
    std::lock_guard lock(ingress_->mutex);
    incoming.swap(ingress_->messages);
    reconnected = std::exchange(ingress_->reconnected, false);
    ingress_->posted = false;
  }
  // The server forgets pull requests when it restarts, and cnats does not re-send them.
  if (reconnected) drop_all_pulls("reconnected");
  if (!incoming.empty()) last_heard_ = Clock::now();
  for (auto& message : incoming) {
    const char* reply = natsMsg_GetReply(message.get());
    if (!reply || std::string_view(reply).rfind("$JS.ACK.", 0) != 0) {
      // Status replies come on the request's own reply subject, which names the pull.
      const std::string_view subject = natsMsg_GetSubject(message.get());
      std::uint64_t pull = 0;
      if (subject.size() > inbox_.size()) {
        const auto token = subject.substr(inbox_.size());
        std::from_chars(token.data(), token.data() + token.size(), pull);
      }
      const char* status = nullptr;
      natsMsgHeader_Get(message.get(), "Status", &status);
      handle_status(message.get(), pull, status ? status : "");
      continue;
    }
    used_one_credit();
    batch.push_back(std::move(message));
  }
  if (on_messages_) on_messages_(batch);
}

void JetStreamReader::handle_status(natsMsg* message, std::uint64_t pull, const char* status) {
  const std::string_view code(status);
  if (code == "100") return;  // idle heartbeat: the request is alive
  const char* description = nullptr;
  natsMsgHeader_Get(message, "Description", &description);
  auto found = pulls_.find(pull);
  if (found != pulls_.end()) {
    requested_ -= found->second.remaining;
    pulls_.erase(found);
  }
  if (code == "404" || code == "408") return;  // nothing more for that request
  spdlog::warn("nats: pull request answered with status {} ({}); pulling anew", code, description ? description : "");
}

void JetStreamReader::used_one_credit() {
  // A message arrives under its own subject, not the request's, so it cannot say which pull it
  // answers. The server fills waiting requests oldest first, so it is charged to the oldest.
  auto oldest = pulls_.begin();
  if (oldest == pulls_.end()) return;  // from a request dropped after a reconnect
  --requested_;
  if (--oldest->second.remaining == 0) pulls_.erase(oldest);
}

void JetStreamReader::drop_all_pulls(const char* why) {
  if (!pulls_.empty()) spdlog::info("nats: dropping {} outstanding pull request(s): {}", pulls_.size(), why);
  pulls_.clear();
  requested_ = 0;
  last_heard_ = Clock::now();
}

void JetStreamReader::check_liveness() {
  if (pulls_.empty()) return;
  const auto now = Clock::now();
  if (now - last_heard_ > 3 * config_.consumer.idle_heartbeat) {
    drop_all_pulls("no heartbeat from the server");
    return;
  }
  // An expiry whose 408 never came (lost in a reconnect) must not hold credit for ever.
  for (auto it = pulls_.begin(); it != pulls_.end();) {
    if (it->second.expires + std::chrono::seconds(2) < now) {
      requested_ -= it->second.remaining;
      it = pulls_.erase(it);
    } else {
      ++it;
    }
  }
}

void JetStreamReader::stop_pulling() { pulling_ = false; }

Duration JetStreamReader::handback_delay() const {
  // A message nak'd while one of our pull requests still waits at the server would be redelivered
  // into it at once; nats-server 2.9 does not check that anyone still reads a request's reply
  // subject before it delivers. So a message handed back waits until our last request expired.
  if (pulls_.empty()) return Duration(0);
  auto latest = Clock::now();
  for (const auto& [id, pull] : pulls_) latest = std::max(latest, pull.expires);
  return std::chrono::duration_cast<Duration>(latest - Clock::now()) + Duration(250);
}

void JetStreamReader::reply(natsMsg* message, const char* body, std::size_t length) {
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
  pulling_ = false;
  ingress_->closing = true;
  if (subscription_) {
    natsSubscription_Unsubscribe(subscription_.get());
    subscription_.reset();
  }
  if (connection_) {
    natsConnection_FlushTimeout(connection_.get(), timeout.count());
    natsConnection_Close(connection_.get());
    connection_.reset();
  }
}

}  // namespace jetfan
