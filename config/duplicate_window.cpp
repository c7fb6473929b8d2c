#include "duplicate_window.hpp"

#include <algorithm>

#include "effective_config.hpp"

namespace jetfan {

std::optional<Duration> redelivery_span(const DuplicateWindowFacts& facts) {
  std::uint64_t deliveries = facts.max_deliver > 0 ? static_cast<std::uint64_t>(facts.max_deliver) : 0;
  if (facts.max_attempts > 0 && (deliveries == 0 || facts.max_attempts < deliveries)) deliveries = facts.max_attempts;
  if (deliveries == 0) return std::nullopt;
  return facts.ack_wait * static_cast<Duration::rep>(deliveries);
}

std::optional<std::string> duplicate_window_problem(const DuplicateWindowFacts& facts) {
  const std::string subject = "handler \"" + std::string(facts.handler) + "\" publishes to stream \"" +
                              std::string(facts.stream) + "\", whose duplicate_window ";
  const auto span = redelivery_span(facts);
  if (!span) {
    return subject + "is " + format_duration(facts.duplicate_window) +
           "; a message may be redelivered without end (the consumer's MaxDeliver is unlimited and the handler has "
           "no retry.max_attempts), so a redelivery past the window would publish a tied follow-up a second time. "
           "Bound the deliveries, or give the stream a window longer than any redelivery can come";
  }
  if (facts.duplicate_window >= *span) return std::nullopt;
  const auto deliveries = span->count() / std::max<Duration::rep>(facts.ack_wait.count(), 1);
  return subject + format_duration(facts.duplicate_window) + " is shorter than AckWait " +
         format_duration(facts.ack_wait) + " x " + std::to_string(deliveries) +
         " deliveries = " + format_duration(*span) +
         ": a redelivery past the window would publish a tied follow-up a second time. Give the stream a "
         "duplicate_window of at least " +
         format_duration(*span);
}

}  // namespace jetfan
