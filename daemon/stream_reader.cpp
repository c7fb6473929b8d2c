#include "stream_reader.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <string>

#include "logging.hpp"
#include "nats_handles.hpp"

namespace jetfan {

std::optional<std::vector<jetstream::StoredMessage>> StreamReader::read(std::uint64_t after, std::uint64_t through,
                                                                        std::string_view filter, std::size_t limit,
                                                                        Duration budget) {
  // Requests in flight at once: one round trip each would cost seconds for a few thousand messages.
  constexpr std::uint64_t kWindow = 256;
  const std::string subject = jetstream::msg_get_subject(config_.consumer.stream);
  const std::int64_t timeout_ms = std::max<std::int64_t>(config_.nats.connect_timeout.count(), 1000);
  std::map<std::uint64_t, jetstream::StoredMessage> read;
  std::string why;
  const auto call = [&] {
    natsInbox* raw_inbox = nullptr;
    if (natsInbox_Create(&raw_inbox) != NATS_OK) {
      why = "cannot create an inbox";
      return;
    }
    NatsInboxPtr inbox(raw_inbox);
    const std::string prefix = std::string(inbox.get()) + ".";
    natsSubscription* raw_subscription = nullptr;
    if (const natsStatus status =
            natsConnection_SubscribeSync(&raw_subscription, nats_.connection(), (prefix + "*").c_str());
        status != NATS_OK) {
      why = nats_last_error(status);
      return;
    }
    NatsSubscriptionPtr subscription(raw_subscription);
    natsSubscription_SetPendingLimits(raw_subscription, -1, -1);
    const auto deadline = std::chrono::steady_clock::now() + budget;
    std::uint64_t next = after + 1;
    std::uint64_t waiting = 0;
    while (next <= through || waiting > 0) {
      // Each asks for the first message at or after its sequence that the filter takes; an answer
      // beyond what was asked lets the asking skip ahead (deleted or filtered-out sequences).
      while (next <= through && waiting < kWindow) {
        const std::string body = jetstream::msg_get_next_request(next, filter);
        const std::string reply = prefix + std::to_string(next);
        if (const natsStatus status = natsConnection_PublishRequest(nats_.connection(), subject.c_str(), reply.c_str(),
                                                                    body.data(), static_cast<int>(body.size()));
            status != NATS_OK) {
          why = nats_last_error(status);
          return;
        }
        ++next;
        ++waiting;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        why = "reading took longer than " + std::to_string(budget.count()) + "ms";
        return;
      }
      natsMsg* raw_reply = nullptr;
      if (const natsStatus status = natsSubscription_NextMsg(&raw_reply, raw_subscription, timeout_ms);
          status != NATS_OK) {
        why = nats_last_error(status);
        return;
      }
      NatsMsgPtr reply(raw_reply);
      --waiting;
      auto answer = jetstream::parse_msg_get(
          std::string_view(natsMsg_GetData(raw_reply), static_cast<std::size_t>(natsMsg_GetDataLength(raw_reply))));
      if (std::holds_alternative<jetstream::NoMessage>(answer)) continue;
      if (auto* error = std::get_if<jetstream::ApiError>(&answer)) {
        why = error->describe();
        return;
      }
      auto& message = std::get<jetstream::StoredMessage>(answer);
      if (message.seq <= after || message.seq > through) continue;
      next = std::max(next, message.seq + 1);
      const std::uint64_t seq = message.seq;
      message.payload = std::string();  // the order keys need subject and headers; up to `limit` are kept
      read.emplace(seq, std::move(message));
      if (read.size() > limit) {
        why = "more than " + std::to_string(limit) + " messages";
        return;
      }
    }
  };
  nats_.wait_off_thread(call, Duration(0));
  if (!why.empty()) {
    log_warn("order.stream_unread",
             {{"stream", config_.consumer.stream}, {"from", after + 1}, {"through", through}, {"reason", why}},
             "nats: cannot read stream \"{}\" from seq {} to {}: {}", config_.consumer.stream, after + 1, through, why);
    return std::nullopt;
  }
  std::vector<jetstream::StoredMessage> out;
  out.reserve(read.size());
  for (auto& [seq, message] : read) out.push_back(std::move(message));
  return out;
}

}  // namespace jetfan
