#pragma once
// MeshController: a stand-in for the module controller of an event mesh. It does what jetfan
// never does: creates the stream and the module's durable pull consumer. It also publishes events
// and reads the consumer's state. The demo and the integration tests use it; it is not part of
// the daemon.
//
// Blocking; one thread at a time. Errors throw std::runtime_error.

#include "nats_handles.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace jetfan::example {

struct ConsumerSpec {
  std::string durable;
  std::string filter;  // empty: the whole stream
  std::string ack_policy = "explicit";
  std::chrono::milliseconds ack_wait{30000};
  std::int64_t max_deliver = -1;
  std::int64_t max_ack_pending = 1000;
};

struct ConsumerState {
  std::uint64_t num_pending = 0;     // in the stream, not yet delivered
  std::int64_t num_ack_pending = 0;  // delivered, not yet acked
  std::int64_t num_redelivered = 0;
  std::uint64_t delivered_stream_seq = 0;
  std::uint64_t ack_floor_stream_seq = 0;
};

// How the controller authenticates and encrypts; every field is optional.
struct ControllerAuth {
  std::string token;
  std::string creds;                      // a creds file (user JWT and NKey seed)
  std::string tls_ca, tls_cert, tls_key;  // tls_ca set: TLS, trusting that CA; cert+key: a client certificate
};

class MeshController {
 public:
  // Connects to `url`; `token` is used if not empty.
  explicit MeshController(const std::string& url, const std::string& token = "");
  MeshController(const std::string& url, const ControllerAuth& auth);

  // max_msgs > 0: the stream keeps at most that many and refuses more (discard new), as a
  // dead-letter stream with a quota might.
  // max_msgs > 0: it refuses more (DiscardNew). duplicate_window 0: the server's default (2 minutes).
  void create_stream(const std::string& stream, const std::vector<std::string>& subjects, std::int64_t max_msgs = 0,
                     std::chrono::milliseconds duplicate_window = std::chrono::milliseconds(0));
  void delete_stream(const std::string& stream);  // no error if there is none
  // A key-value bucket (stream KV_<bucket>) as docs/OPERATING.md "Ledger" has it made for jetfan's
  // confirmation ledger: history 1, records expiring after `ttl`, `replicas` copies.
  void create_key_value(const std::string& bucket, std::chrono::milliseconds ttl, int replicas = 1);
  void create_consumer(const std::string& stream, const ConsumerSpec& spec);
  // Publishes to JetStream and waits for the stream's ack. Returns the stream sequence.
  std::uint64_t publish(const std::string& subject, const std::string& payload,
                        const std::vector<std::pair<std::string, std::string>>& headers = {});
  ConsumerState state(const std::string& stream, const std::string& durable);
  // One message of a stream, read by sequence; its headers (in no set order). Throws if there is none.
  struct StoredMessage {
    std::string subject;
    std::vector<std::pair<std::string, std::string>> headers;
    std::string payload;
  };
  StoredMessage get_message(const std::string& stream, std::uint64_t seq);
  void delete_message(const std::string& stream, std::uint64_t seq);
  std::uint64_t stream_messages(const std::string& stream);  // how many it holds now
  // The names of the stream's consumers, to show none was added.
  std::vector<std::string> consumers(const std::string& stream);
  // A plain request (e.g. to the JetStream API, for what cnats has no call for); the reply's text.
  std::string request(const std::string& subject, const std::string& body);
  // Subscribes to `subject` (plain NATS); watched() counts what has arrived since.
  void watch(const std::string& subject);
  int watched();

 private:
  NatsConnectionPtr connection_;
  JsCtxPtr js_;
  NatsSubscriptionPtr watch_;
};

}  // namespace jetfan::example
