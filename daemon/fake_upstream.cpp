#include "fake_upstream.hpp"

#include <memory>

#include "jetstream_subject.hpp"

namespace jetfan {

ConsumerFacts fake_consumer_facts() {
  ConsumerFacts facts;
  facts.from_server = true;
  facts.ack_policy = AckPolicy::kExplicit;
  facts.ack_wait = std::chrono::milliseconds(30000);
  return facts;
}

namespace {

// The storage of one fake message's views.
struct Strings {
  std::string subject;
  std::string reply;
  std::string headers;
  std::string payload;
};

void free_strings(void* strings) { std::unique_ptr<Strings> owned(static_cast<Strings*>(strings)); }

}  // namespace

FakeUpstream::FakeUpstream(MessageBytesArena& arena, std::string strip_prefix)
    : arena_(arena), strip_prefix_(std::move(strip_prefix)) {}

bool FakeUpstream::send_pull(const PullRequest& request) {
  if (closed) return false;
  pulls.push_back(request);
  pull_pins.push_back(PullPin{std::string(request.group), std::string(request.pin_id)});
  pulls.back().group = pulls.back().pin_id = {};
  return true;
}

bool FakeUpstream::send_probe(std::uint64_t id) {
  if (closed) return false;
  probes.push_back(id);
  return true;
}

bool FakeUpstream::publish(std::uint64_t id, std::string_view subject, std::string_view headers,
                           std::string_view payload) {
  if (closed) return false;
  published.push_back(Published{id, std::string(subject), std::string(headers), std::string(payload)});
  return true;
}

bool FakeUpstream::api_request(std::uint64_t id, std::string_view subject, std::string_view body) {
  if (closed) return false;
  auto& requests = subject.rfind("$JS.API.CONSUMER.INFO.", 0) == 0 ? consumer_info_requests : api_requests;
  requests.push_back(ApiRequest{id, std::string(subject), std::string(body)});
  return true;
}

void FakeUpstream::close(Duration) {
  closed = true;
  listener_ = nullptr;
}

void FakeUpstream::record(Reply::Kind kind, const MessageBytes& message, Duration delay) {
  const auto ack = jetstream::parse_ack_subject(message.reply());
  replies.push_back(Reply{kind, ack ? ack->stream_seq : 0, ack ? ack->deliveries : 0, delay});
}

void FakeUpstream::deliver(const Message& message) {
  if (!listener_) return;
  auto strings = std::make_unique<Strings>();
  strings->subject = message.subject;
  const std::uint64_t consumer_seq = ++consumer_seq_;
  strings->reply = "$JS.ACK.STREAM.CONSUMER." + std::to_string(message.deliveries) + "." +
                   std::to_string(message.stream_seq) + "." + std::to_string(consumer_seq) + "." +
                   std::to_string(message.published_ns) + ".0";
  strings->payload = message.payload;
  InboundMessage in;
  const auto key = jetstream::key_of(strings->subject, strip_prefix_);
  in.routable = key.has_value() && message.stream_seq != 0;
  if (key) in.key = *key;
  if (in.routable) strings->headers = message.headers;
  in.stream_seq = message.stream_seq;
  in.deliveries = message.deliveries;
  in.consumer_seq = consumer_seq;
  in.published_ns = message.published_ns;
  MessageParts parts{BytesOwner(nullptr, free_strings), strings->subject, strings->reply, strings->headers,
                     strings->payload};
  parts.owner.reset(strings.release());
  in.bytes = make_message_bytes(std::move(parts), arena_);
  listener_->on_message(std::move(in));
  batch_end();
}

void FakeUpstream::status(std::uint64_t pull, std::string_view code, std::string_view description) {
  if (!listener_) return;
  listener_->on_pull_status(PullStatus{pull, code, description});
  batch_end();
}

void FakeUpstream::probe_answer(bool answered) {
  if (!listener_) return;
  listener_->on_probe_answer(answered);
  batch_end();
}

void FakeUpstream::disconnect(std::string_view why) {
  if (!listener_) return;
  listener_->on_disconnected(why);
  batch_end();
}

void FakeUpstream::reconnect() {
  if (!listener_) return;
  listener_->on_reconnected();
  batch_end();
}

void FakeUpstream::publish_answer(std::uint64_t id, const PublishResult& result) {
  if (!listener_) return;
  listener_->on_published(id, result);
  batch_end();
}

void FakeUpstream::api_answer(std::uint64_t id, std::string_view json, std::string_view error) {
  if (!listener_) return;
  listener_->on_api_reply(id, ApiReply{json, error});
  batch_end();
}

void FakeUpstream::end() {
  batching_ = false;
  batch_end();
}

void FakeUpstream::batch_end() {
  if (!batching_ && listener_) listener_->on_batch_end();
}

}  // namespace jetfan
