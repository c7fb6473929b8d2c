#include "handler_publisher.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "nats_header.hpp"
#include "nats_subject.hpp"

namespace jetfan {

std::string tied_msg_id(std::string_view stream, std::string_view durable, std::uint64_t stream_seq,
                        std::string_view handler, std::uint64_t index) {
  return fmt::format("jetfan:{}:{}:{}:{}:{}", stream, durable, stream_seq, handler, index);
}

std::string with_msg_id(std::string_view headers, std::string_view msg_id) {
  constexpr std::string_view kName = "Nats-Msg-Id";
  std::string out;
  out.reserve(headers.size() + kName.size() + msg_id.size() + 16);
  if (headers.empty()) {
    out.append("NATS/1.0\r\n");
  } else {
    // The status line, then every field but a Nats-Msg-Id, as they came (the block ends with a blank line).
    const std::size_t first_end = headers.find("\r\n");
    out.append(headers.substr(0, first_end + 2));
    proto::HeaderFields fields(headers);
    proto::HeaderField field;
    while (fields.next(field)) {
      const bool named =
          field.name.size() == kName.size() &&
          std::equal(field.name.begin(), field.name.end(), kName.begin(), [](char a, char b) {
            return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
          });
      if (named) continue;
      out.append(field.name).append(": ").append(field.value).append("\r\n");
    }
  }
  out.append(kName).append(": ").append(msg_id).append("\r\n\r\n");
  return out;
}

PublishReply HandlerPublisher::refuse(PublishStats& stats, ConnectionId connection, std::uint64_t request,
                                      proto::PublishError code, std::string reason) {
  ++(code == proto::PublishError::kServerDown ? stats.failed : stats.refused);
  PublishReply reply;
  reply.connection = connection;
  reply.request = request;
  reply.code = code;
  reply.reason = std::move(reason);
  return reply;
}

namespace {

std::string tie_failure(std::uint64_t request, const PublishReply& reply) {
  return fmt::format("jetfan made its ACK a NAK: the tied publish of request {} failed: {} {}", request,
                     proto::to_string(reply.code), reply.reason);
}

}  // namespace

std::optional<PublishReply> HandlerPublisher::publish(ConnectionId connection, std::string_view handler_name,
                                                      const std::optional<PublishSettings>& settings,
                                                      const proto::Command& pub, std::optional<std::uint64_t> tied_seq,
                                                      std::string_view msg_id, TimePoint now) {
  auto reply = judge_and_send(connection, handler_name, settings, pub, tied_seq, msg_id, now);
  // A tied publish refused before it reached the server fails its delivery's ACK as one the server
  // refused would: the handler meant the delivery to count only with it stored.
  if (reply && pub.tied_to && tied_seq) {
    Tie& tie = ties_[{connection, *pub.tied_to}];
    if (tie.failed.empty()) tie.failed = tie_failure(pub.id, *reply);
  }
  return reply;
}

std::optional<PublishReply> HandlerPublisher::judge_and_send(ConnectionId connection, std::string_view handler_name,
                                                             const std::optional<PublishSettings>& settings,
                                                             const proto::Command& pub,
                                                             std::optional<std::uint64_t> tied_seq,
                                                             std::string_view msg_id, TimePoint now) {
  using proto::PublishError;
  auto found_stats = stats_.find(handler_name);
  if (found_stats == stats_.end()) found_stats = stats_.emplace(std::string(handler_name), PublishStats{}).first;
  PublishStats& stats = found_stats->second;
  // What is wrong with the PUB itself first, then whether this handler may send it anywhere.
  if (pub.dropped) {
    return refuse(stats, connection, pub.id, PublishError::kTooLarge,
                  fmt::format("{} bytes is more than the NATS server takes (its max_payload)", pub.body_bytes));
  }
  if (!proto::is_publish_subject(pub.subject)) {
    return refuse(stats, connection, pub.id, PublishError::kBadSubject,
                  "not a subject to publish to (an empty token, a wildcard, a blank or a control byte)");
  }
  if (!proto::is_header_block(pub.headers)) {
    return refuse(stats, connection, pub.id, PublishError::kBadHeaders,
                  "the header block does not start with NATS/1.0 and end with a blank line");
  }
  if (pub.tied_to && !tied_seq) {
    return refuse(stats, connection, pub.id, PublishError::kNotInFlight,
                  fmt::format("delivery {} is not in flight on this connection", *pub.tied_to));
  }
  Waiting& waiting = waiting_[connection];
  if (waiting.requests.count(pub.id) != 0) {
    return refuse(stats, connection, pub.id, PublishError::kBusyId,
                  fmt::format("request {} is still waiting for the server", pub.id));
  }
  if (!settings) {
    return refuse(
        stats, connection, pub.id, PublishError::kNotAllowed,
        fmt::format("handler \"{}\" may not publish: it has no publish.subjects in jetfan's config", handler_name));
  }
  const bool allowed = std::any_of(settings->subjects.begin(), settings->subjects.end(),
                                   [&](const std::string& pattern) { return subject_matches(pattern, pub.subject); });
  if (!allowed) {
    return refuse(stats, connection, pub.id, PublishError::kNotAllowed,
                  fmt::format("handler \"{}\" may not publish to \"{}\": its publish.subjects are {}", handler_name,
                              pub.subject, fmt::join(settings->subjects, ", ")));
  }
  const std::uint64_t id = kIdBit | next_id_++;
  const std::string tied_headers = pub.tied_to ? with_msg_id(pub.headers, msg_id) : std::string();
  if (!upstream_.publish(id, pub.subject, pub.tied_to ? std::string_view(tied_headers) : pub.headers, pub.payload)) {
    return refuse(stats, connection, pub.id, PublishError::kServerDown,
                  "jetfan could not send it to the server (no connection)");
  }
  const std::size_t bytes = pub.headers.size() + pub.payload.size();
  pending_.emplace(id, Pending{connection, pub.id, bytes, now, now + settings->timeout, &stats, pub.tied_to});
  ++stats.in_flight;
  ++waiting.publishes;
  waiting.bytes += bytes;
  waiting.requests.emplace(pub.id, id);
  if (pub.tied_to) ++ties_[{connection, *pub.tied_to}].waiting;
  return std::nullopt;
}

PublishReply HandlerPublisher::settle(std::map<std::uint64_t, Pending>::iterator found, bool stored,
                                      PublishReply reply) {
  const Pending pending = found->second;
  pending_.erase(found);
  --pending.stats->in_flight;
  reply.connection = pending.connection;
  reply.request = pending.request;
  reply.stored = stored;
  if (auto w = waiting_.find(pending.connection); w != waiting_.end()) {
    --w->second.publishes;
    w->second.bytes -= pending.bytes;
    w->second.requests.erase(pending.request);
  }
  if (pending.tied_to) {
    const auto key = std::make_pair(pending.connection, *pending.tied_to);
    if (auto tie = ties_.find(key); tie != ties_.end()) {
      Tie& t = tie->second;
      --t.waiting;
      if (!stored && t.failed.empty()) {
        t.failed = tie_failure(pending.request, reply);
      }
      if (t.waiting == 0) {
        if (t.ack_held) released_.push_back(ReleasedAck{pending.connection, *pending.tied_to, t.failed});
        // Without an ACK yet, a failure is remembered for the ACK to come.
        if (t.ack_held || t.failed.empty() || t.settled) ties_.erase(tie);
      }
    }
  }
  return reply;
}

std::optional<PublishReply> HandlerPublisher::on_published(std::uint64_t id, const PublishResult& result,
                                                           TimePoint now) {
  const auto found = pending_.find(id);
  if (found == pending_.end()) return std::nullopt;  // timed out, or its connection went
  PublishStats& stats = *found->second.stats;
  stats.latency.observe(now - found->second.sent);
  PublishReply reply;
  if (result.stored) {
    ++(result.duplicate ? stats.duplicates : stats.stored);
    reply.stream = std::string(result.stream);
    reply.seq = result.stream_seq;
    reply.duplicate = result.duplicate;
  } else {
    ++stats.failed;
    reply.code = result.no_stream ? proto::PublishError::kNoStream : proto::PublishError::kRefused;
    reply.reason = std::string(result.error);
  }
  return settle(found, result.stored, std::move(reply));
}

std::vector<PublishReply> HandlerPublisher::time_out(TimePoint now) {
  std::vector<PublishReply> replies;
  for (auto it = pending_.begin(); it != pending_.end();) {
    const auto next = std::next(it);
    if (it->second.deadline <= now) {
      ++it->second.stats->timed_out;
      PublishReply reply;
      reply.code = proto::PublishError::kTimeout;
      reply.reason = "no answer from the server in time; it may have been stored";
      replies.push_back(settle(it, false, std::move(reply)));
    }
    it = next;
  }
  return replies;
}

std::optional<TimePoint> HandlerPublisher::next_deadline() const {
  std::optional<TimePoint> first;
  for (const auto& [id, pending] : pending_) {
    if (!first || pending.deadline < *first) first = pending.deadline;
  }
  return first;
}

bool HandlerPublisher::hold_ack(ConnectionId connection, DeliveryId delivery) {
  if (ties_.empty()) return false;  // every ACK comes here: most find nothing tied
  const auto tie = ties_.find({connection, delivery});
  if (tie == ties_.end()) return false;
  if (tie->second.waiting == 0) {  // all answered before the ACK, one of them failed
    released_.push_back(ReleasedAck{connection, delivery, tie->second.failed});
    ties_.erase(tie);
    return true;
  }
  tie->second.ack_held = true;
  return true;
}

std::vector<ReleasedAck> HandlerPublisher::released() { return std::exchange(released_, {}); }

void HandlerPublisher::settled_otherwise(ConnectionId connection, DeliveryId delivery) {
  if (ties_.empty()) return;
  const auto tie = ties_.find({connection, delivery});
  if (tie == ties_.end()) return;
  if (tie->second.waiting == 0) {
    ties_.erase(tie);
  } else {
    tie->second.settled = true;
  }
}

void HandlerPublisher::forget(ConnectionId connection) {
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (it->second.connection != connection) {
      ++it;
      continue;
    }
    --it->second.stats->in_flight;
    it = pending_.erase(it);
  }
  waiting_.erase(connection);
  ties_.erase(ties_.lower_bound({connection, 0}), ties_.lower_bound({connection + 1, 0}));
  std::erase_if(released_, [&](const ReleasedAck& r) { return r.connection == connection; });
}

bool HandlerPublisher::full(ConnectionId connection, const PublishSettings& settings) const {
  const auto found = waiting_.find(connection);
  return found != waiting_.end() &&
         (found->second.publishes >= settings.max_in_flight || found->second.bytes >= settings.max_bytes);
}

std::size_t HandlerPublisher::waiting(ConnectionId connection) const {
  const auto found = waiting_.find(connection);
  return found == waiting_.end() ? 0 : found->second.publishes;
}

}  // namespace jetfan
