#include "other_reader.hpp"

#include <algorithm>

namespace jetfan {

std::uint64_t OtherReaderCheck::missed(const Own& own) const {
  // Deliveries below a number that reached jetfan were sent before it, on the one connection, so
  // they reached jetfan too if they were its; those up to the server's count an answer ago have
  // had a poll's time to arrive.
  const std::uint64_t upto = std::max(delivered_.value_or(0), own.highest_consumer_seq);
  if (upto <= base_) return 0;
  const std::uint64_t numbered = upto - base_;
  return numbered > own.arrivals ? numbered - own.arrivals : 0;
}

const OtherReaderVerdict& OtherReaderCheck::observe(TimePoint now, const Server& server, const Own& own) {
  const std::uint64_t waiting_elsewhere =
      server.num_waiting > own.outstanding_pulls ? server.num_waiting - own.outstanding_pulls : 0;
  if (settled_at_ && now < *settled_at_) excused_ = true;
  if (excused_) {
    excused_ = false;
    delivered_ = server.delivered_consumer_seq;
    accepted_ = missed(own);
    missed_before_.reset();
    waiting_since_.reset();
    return verdict_;
  }
  const std::uint64_t missed_now = missed(own);
  delivered_ = server.delivered_consumer_seq;

  bool evidence = false;
  std::uint64_t elsewhere = 0;
  if (missed_before_ && std::min(*missed_before_, missed_now) > accepted_) {
    // Confirmed at two answers: counted once, so that only a new theft is new evidence.
    const std::uint64_t confirmed = std::min(*missed_before_, missed_now);
    evidence = true;
    elsewhere = confirmed - accepted_;
    accepted_ = confirmed;
  }
  missed_before_ = missed_now;

  if (waiting_elsewhere == 0) {
    waiting_since_.reset();
  } else if (!waiting_since_) {
    waiting_since_ = now;
  }
  const bool waiting = waiting_since_ && now - *waiting_since_ >= waiting_for_;
  evidence = evidence || waiting;

  if (evidence) {
    last_evidence_ = now;
    verdict_.seen = true;
    verdict_.deliveries_elsewhere += elsewhere;
    verdict_.waiting_elsewhere = waiting ? waiting_elsewhere : 0;
  } else if (verdict_.seen && (!last_evidence_ || now - *last_evidence_ >= quiet_) && waiting_elsewhere == 0) {
    verdict_ = OtherReaderVerdict{};
  } else if (verdict_.seen) {
    verdict_.waiting_elsewhere = waiting_elsewhere;
  }
  return verdict_;
}

}  // namespace jetfan
