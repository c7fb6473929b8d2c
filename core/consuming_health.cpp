#include "consuming_health.hpp"

#include <chrono>

namespace jetfan {

void ConsumingHealth::disconnected(TimePoint now, std::string why) {
  if (!disconnected_since_) disconnected_since_ = now;
  last_why_ = std::move(why);
}

void ConsumingHealth::reconnected() { disconnected_since_.reset(); }

std::optional<Duration> ConsumingHealth::disconnected_for(TimePoint now) const {
  if (!disconnected_since_) return std::nullopt;
  return std::chrono::duration_cast<Duration>(now - *disconnected_since_);
}

std::vector<std::string> ConsumingHealth::reasons(TimePoint now) const {
  std::vector<std::string> out;
  if (const auto lost = disconnected_for(now); lost && *lost >= grace_) {
    out.push_back("not connected to NATS for " + std::to_string(lost->count() / 1000) + "s" +
                  (last_why_.empty() ? std::string() : " (" + last_why_ + ")") +
                  ": nothing is consumed; jetfan keeps reconnecting, and what it holds is kept");
  }
  if (missing_) {
    out.push_back("the consumer cannot be read: " + *missing_ +
                  "; nothing is consumed until the controller makes it again (jetfan never creates one)");
  }
  if (other_) out.push_back(*other_);
  return out;
}

}  // namespace jetfan
