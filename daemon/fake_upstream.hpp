#pragma once
// FakeUpstream: an Upstream (upstream.hpp) with no server behind it, for the dispatcher's unit
// tests and the session fuzzer. What the dispatcher asks of it is recorded; what a server would
// send is fed in by the test, one batch per call (or several, between begin() and end()).
//
// Messages carry a reply subject of the server's form ($JS.ACK.<stream>.<consumer>.<deliveries>.
// <stream seq>.<consumer seq>.<time>.<pending>), so each reply is recorded with its sequence.
//
// Thread: the test's, which also runs the io_context the dispatcher's sessions use.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "message_bytes.hpp"
#include "serve_settings.hpp"
#include "upstream.hpp"

namespace jetfan {

// The consumer a FakeUpstream stands for, as if read from a server: AckPolicy explicit, AckWait 30 s.
ConsumerFacts fake_consumer_facts();

class FakeUpstream final : public Upstream {
 public:
  struct Reply {
    enum class Kind { kAck, kNak, kTerm, kWip };
    Kind kind;
    std::uint64_t stream_seq = 0;
    std::uint64_t deliveries = 0;
    Duration delay{0};  // kNak
  };
  struct Published {
    std::uint64_t id = 0;
    std::string subject, headers, payload;
  };
  struct ApiRequest {
    std::uint64_t id = 0;
    std::string subject, body;
  };
  struct Message {
    std::uint64_t stream_seq = 0;
    std::string subject;
    std::string payload;
    std::string headers;  // a NATS/1.0 block, or empty
    std::uint64_t deliveries = 1;
    std::uint64_t published_ns = 0;
  };
  // Each delivery is numbered like the server numbers a consumer's deliveries; a test that skips
  // numbers (lose()) has deliveries lost on the way.

  // Keys are subjects less `strip_prefix`; message bytes are counted in `arena`, which must
  // outlive them.
  FakeUpstream(MessageBytesArena& arena, std::string strip_prefix);

  // Upstream.
  void listen(UpstreamListener* listener) override { listener_ = listener; }
  bool send_pull(const PullRequest& request) override;
  bool send_probe(std::uint64_t id) override;
  void ack(const MessageBytes& message) override { record(Reply::Kind::kAck, message, Duration(0)); }
  void nak(const MessageBytes& message, Duration delay) override { record(Reply::Kind::kNak, message, delay); }
  void term(const MessageBytes& message) override { record(Reply::Kind::kTerm, message, Duration(0)); }
  void wip(const MessageBytes& message) override { record(Reply::Kind::kWip, message, Duration(0)); }
  bool publish(std::uint64_t id, std::string_view subject, std::string_view headers, std::string_view payload) override;
  bool api_request(std::uint64_t id, std::string_view subject, std::string_view body) override;
  void close(Duration timeout) override;
  std::size_t max_payload() const override { return max_payload_bytes; }
  std::size_t max_payload_bytes = 1024 * 1024;  // what the fake server's INFO says

  // What a server sends, each as one batch (ended by on_batch_end). Nothing happens when nobody
  // listens.
  void deliver(const Message& message);
  void lose(std::uint64_t deliveries = 1) { consumer_seq_ += deliveries; }
  void status(std::uint64_t pull, std::string_view code, std::string_view description = {});
  void probe_answer(bool answered);
  void disconnect(std::string_view why = "connection reset");
  void reconnect();
  void publish_answer(std::uint64_t id, const PublishResult& result);
  void api_answer(std::uint64_t id, std::string_view json, std::string_view error = {});
  // Between begin() and end(), the calls above make one batch together.
  void begin() { batching_ = true; }
  void end();

  // What the dispatcher asked for, in order. Tests may clear them.
  std::vector<PullRequest> pulls;  // their group and pin_id views are not kept: see pull_pins
  struct PullPin {
    std::string group, pin_id;  // of pulls[i], copied (a pinned_client group's)
  };
  std::vector<PullPin> pull_pins;
  std::vector<std::uint64_t> probes;
  std::vector<Reply> replies;
  std::vector<Published> published;
  std::vector<ApiRequest> api_requests;            // but the consumer's info
  std::vector<ApiRequest> consumer_info_requests;  // $JS.API.CONSUMER.INFO.<stream>.<consumer>
  bool closed = false;

  bool listening() const { return listener_ != nullptr; }
  // The consumer's number of its last delivery, those lost on the way (lose()) included.
  std::uint64_t delivered_consumer_seq() const { return consumer_seq_; }

 private:
  void record(Reply::Kind kind, const MessageBytes& message, Duration delay);
  void batch_end();

  MessageBytesArena& arena_;
  std::string strip_prefix_;
  UpstreamListener* listener_ = nullptr;
  bool batching_ = false;
  std::uint64_t consumer_seq_ = 0;
};

}  // namespace jetfan
