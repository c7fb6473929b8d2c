#include "consumer_watch.hpp"

namespace jetfan {

namespace {

// Requests whose answers are awaited at once; an older one is forgotten (its answer, if it comes,
// still updates the view). Answers come within milliseconds, so this bounds only a server gone quiet.
constexpr std::size_t kMaxAwaited = 64;

}  // namespace

ConsumerAnswer server_view(const std::variant<jetstream::ConsumerInfo, jetstream::ApiError>& parsed) {
  if (const auto* error = std::get_if<jetstream::ApiError>(&parsed)) {
    return error->from_server() ? "the server says: " + error->describe() : error->description;
  }
  const auto& info = std::get<jetstream::ConsumerInfo>(parsed);
  ServerConsumerView view;
  view.num_pending = info.num_pending;
  view.num_ack_pending = info.num_ack_pending;
  view.num_redelivered = info.num_redelivered;
  view.num_waiting = info.num_waiting;
  view.delivered_stream_seq = info.delivered.stream_seq;
  view.ack_floor_stream_seq = info.ack_floor.stream_seq;
  view.ack_policy = info.ack_policy;
  view.ack_wait_seconds = std::chrono::duration<double>(info.ack_wait).count();
  view.max_deliver = info.max_deliver;
  view.max_ack_pending = info.max_ack_pending;
  return view;
}

ConsumerWatch::ConsumerWatch(const Config& config, Upstream& upstream)
    : upstream_(upstream),
      subject_(jetstream::consumer_info_subject(config.consumer.stream, config.consumer.durable)) {}

void ConsumerWatch::tick(TimePoint now) {
  if (next_poll_ && now < *next_poll_) return;
  next_poll_ = now + kPollEvery;
  // The poll before, if still unanswered, is given up: one poll at a time.
  for (auto it = asked_.begin(); it != asked_.end();) it = it->second == 0 ? asked_.erase(it) : std::next(it);
  send(0);
}

bool ConsumerWatch::ask(std::uint64_t token) { return send(token); }

bool ConsumerWatch::send(std::uint64_t token) {
  const std::uint64_t id = next_id_++;
  if (!upstream_.api_request(id | kIdBit, subject_, {})) return false;
  if (asked_.size() >= kMaxAwaited) asked_.erase(asked_.begin());
  asked_.emplace(id, token);
  return true;
}

ConsumerWatch::Heard ConsumerWatch::on_reply(std::uint64_t id, const ApiReply& reply, TimePoint now) {
  std::optional<std::uint64_t> token;
  if (const auto found = asked_.find(id & ~kIdBit); found != asked_.end()) {
    token = found->second;
    asked_.erase(found);
  }
  std::variant<jetstream::ConsumerInfo, jetstream::ApiError> parsed =
      reply.json.empty()
          ? jetstream::ApiError{0, 0, reply.error.empty() ? std::string("no answer") : std::string(reply.error)}
          : jetstream::parse_consumer_info(reply.json);
  Heard heard;
  if (auto* info = std::get_if<jetstream::ConsumerInfo>(&parsed)) {
    last_ = std::move(*info);
    last_at_ = now;
    heard.info = &*last_;
  } else {
    heard.error = std::get<jetstream::ApiError>(parsed);
  }
  if (token && *token != 0 && sink_) sink_(*token, last_ && heard.info ? server_view(*last_) : server_view(parsed));
  return heard;
}

void ConsumerWatch::fill(StatusSnapshot& snapshot, TimePoint now) const {
  if (!last_ || now - last_at_ > kStale) return;
  snapshot.polled = std::get<ServerConsumerView>(server_view(*last_));
  snapshot.polled_age_seconds = std::chrono::duration<double>(now - last_at_).count();
}

}  // namespace jetfan
