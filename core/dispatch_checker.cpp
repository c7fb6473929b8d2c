#include "dispatch_checker.hpp"

#include <algorithm>
#include <chrono>

namespace jetfan {

namespace {
HandlerMask bit(std::size_t handler) { return HandlerMask{1} << handler; }
std::string seq_text(std::uint64_t seq) { return " (sequence " + std::to_string(seq) + ")"; }
}  // namespace

DispatchChecker::DispatchChecker(const CoreSettings& settings) : settings_(settings) {}

void DispatchChecker::arrived(const Arrival& arrival) {
  sequence_of_[arrival.message] = arrival.stream_seq;
  auto [entry, fresh] = sequences_.try_emplace(arrival.stream_seq);
  Sequence& s = entry->second;
  if (fresh) {
    s.recipients = arrival.recipients;
    s.unroutable = arrival.unroutable;
  }
  s.deliveries = arrival.deliveries;
  s.handed_back = false;
  auto& keys = order_keys_[arrival.stream_seq];
  for (const OrderKey& order : arrival.order) keys.try_emplace(order.handler, order.key);
  s.live = arrival.message;
}

void DispatchChecker::connected(ConnectionId connection, std::size_t handler) {
  handler_of_[connection] = handler;
  connected_.insert(connection);
}

void DispatchChecker::disconnected(ConnectionId connection) {
  // What it had in flight stays until the core reports each failure.
  connected_.erase(connection);
  gone_.insert(connection);
}

std::string DispatchChecker::answered(ConnectionId connection, DeliveryId delivery, Answer answer, bool core_knew) {
  const auto flight = in_flight_.find({connection, delivery});
  const bool known = flight != in_flight_.end();
  if (core_knew && !known) {
    return "I2: the core accepted an answer from connection " + std::to_string(connection) + " for delivery " +
           std::to_string(delivery) + ", which is not in flight there";
  }
  if (!core_knew && known) {
    return "I2: the core refused an answer from connection " + std::to_string(connection) + " for delivery " +
           std::to_string(delivery) + ", which is in flight there";
  }
  if (!known || answer == Answer::kWip) return "";
  if (answer == Answer::kNak) return "";  // in flight until the core reports the failure
  Sequence& s = sequences_.at(flight->second);
  const HandlerMask handler = bit(handler_of_.at(connection));
  s.confirmed |= handler;
  if (answer == Answer::kTerm) s.termed |= handler;
  s.in_flight &= ~handler;
  --flights_per_connection_[connection];
  in_flight_.erase(flight);
  return "";
}

void DispatchChecker::began_drain(TimePoint now, Duration handback_delay) {
  draining_ = true;
  drain_began_ = true;
  handback_until_ = now + handback_delay;
}

void DispatchChecker::stood_by(TimePoint now, bool standing, Duration handback_delay) {
  if (drain_began_) return;
  draining_ = standing;
  if (standing) handback_until_ = now + handback_delay;
}

std::string DispatchChecker::dead_letter_answered(std::uint64_t publish, bool stored, bool core_knew) {
  const auto found = publishing_.find(publish);
  const bool known = found != publishing_.end();
  if (core_knew != known) {
    return std::string("I2: the core ") + (core_knew ? "accepted" : "refused") + " the answer to dead-letter publish " +
           std::to_string(publish) + ", which is " + (known ? "" : "not ") + "pending";
  }
  if (!known) return "";
  const Publish p = found->second;
  publishing_.erase(found);
  if (stored) {
    Sequence& s = sequences_.at(p.seq);
    s.confirmed |= bit(p.handler);
  } else {
    dead_letters_.erase({p.seq, p.handler});  // tried again later: a new publish of the same dead letter
    retrying_.insert({p.seq, p.handler});
  }
  return "";
}

void DispatchChecker::abandoned_all() {
  for (const auto& [id, p] : publishing_) dead_letters_.erase({p.seq, p.handler});
  publishing_.clear();
  retrying_.clear();
  for (auto& [seq, s] : sequences_) s.in_flight = 0;
  in_flight_.clear();
  flights_per_connection_.clear();
}

std::string DispatchChecker::check(std::span<const Effect> effects, TimePoint now) {
  for (const Effect& effect : effects) {
    if (std::string broken = check_one(effect, now); !broken.empty()) return broken;
  }
  return "";
}

std::string DispatchChecker::check_one(const Effect& effect, TimePoint now) {
  using Kind = Effect::Kind;
  if (released_.count(effect.message)) return "I1: an effect names a copy of a message already released";
  const auto found = sequence_of_.find(effect.message);
  if (found == sequence_of_.end()) return "I1: an effect names a copy of a message that never arrived";
  const std::uint64_t seq = found->second;
  Sequence& s = sequences_.at(seq);
  const bool verb = effect.kind == Kind::kAck || effect.kind == Kind::kNak || effect.kind == Kind::kTerm;
  if ((verb || effect.kind == Kind::kWip) && settings_.ack_policy == AckPolicy::kNone) {
    return "R20: under AckPolicy none, the core told the server something" + seq_text(seq);
  }
  if (verb && !answered_.insert(effect.message).second)
    return "R15: two verbs for one copy of a message" + seq_text(seq);

  switch (effect.kind) {
    case Kind::kDeliver: {
      if (draining_) return "R44: a MSG while draining" + seq_text(seq);
      if (trimmed_.count(effect.message)) return "R18: a MSG of a copy trimmed to its reply subject" + seq_text(seq);
      if (s.unroutable) return "R14: a MSG of a message with no key" + seq_text(seq);
      if (!connected_.count(effect.connection))
        return "R2: a MSG to a connection that is not connected" + seq_text(seq);
      const std::size_t h = handler_of_.at(effect.connection);
      if (!(s.recipients & bit(h))) return "R1: a MSG to a handler that is not a recipient" + seq_text(seq);
      if (s.confirmed & bit(h)) return "R8: a MSG to a handler that already confirmed the message" + seq_text(seq);
      if (s.in_flight & bit(h)) return "R2: a MSG to a handler that already has the message in flight" + seq_text(seq);
      if (dead_letters_.count({seq, h}) || retrying_.count({seq, h})) {
        return "R10: a MSG to a handler whose dead letter of the message is being published" + seq_text(seq);
      }
      if (!delivery_ids_.insert(effect.delivery).second) return "R2: a delivery id used twice" + seq_text(seq);
      if (++flights_per_connection_[effect.connection] > settings_.handlers.at(h).max_inflight) {
        return "R2: more deliveries in flight on connection " + std::to_string(effect.connection) +
               " than its handler's max_inflight";
      }
      if (std::string broken = check_order(seq, h); !broken.empty()) return broken;
      s.in_flight |= bit(h);
      in_flight_[{effect.connection, effect.delivery}] = seq;
      return "";
    }
    case Kind::kAck:
      if (s.unroutable) return "R14: +ACK of a message with no key" + seq_text(seq);
      if (!all_confirmed(s)) return "R4: +ACK before every recipient ACKed" + seq_text(seq);
      if (s.termed != 0) return "R5: +ACK of a message a recipient TERMed" + seq_text(seq);
      if (s.sent_term) return "R5: +ACK of a sequence terminated before" + seq_text(seq);
      s.sent_ack = true;
      return settle(seq);
    case Kind::kTerm:
      if (!s.unroutable && !all_confirmed(s)) return "R5: +TERM before every recipient settled" + seq_text(seq);
      if (!s.unroutable && s.termed == 0) return "R5: +TERM though no recipient said TERM" + seq_text(seq);
      if (s.sent_ack) return "R5: +TERM of a sequence acked before" + seq_text(seq);
      s.sent_term = true;
      return settle(seq);
    case Kind::kNak:
      // A drain under AckPolicy all hands back a copy the server delivered again after the ack was
      // lost, if it still waited for the floor: the server holds that copy once more.
      if (s.settled && !(draining_ && settings_.ack_policy == AckPolicy::kAll)) {
        return "R6: -NAK of a sequence settled at the server" + seq_text(seq);
      }
      if (s.unroutable && !(draining_ && settings_.ack_policy == AckPolicy::kAll)) {
        return "R14: -NAK of a message with no key" + seq_text(seq);
      }
      if (!s.unroutable && all_confirmed(s) && !draining_) {
        return "R6: -NAK of a message every recipient confirmed" + seq_text(seq);
      }
      if (draining_) {
        const Duration left = std::max(Duration(0), std::chrono::ceil<Duration>(handback_until_ - now));
        if (effect.delay != left) {
          return "R45: a hand-back while draining after " + std::to_string(effect.delay.count()) + "ms, not the " +
                 std::to_string(left.count()) + "ms left of the hand-back delay" + seq_text(seq);
        }
      }
      s.handed_back = true;
      return "";
    case Kind::kFailed: {
      const auto flight = in_flight_.find({effect.connection, effect.delivery});
      if (flight == in_flight_.end()) return "I2: a failure reported of a delivery not in flight" + seq_text(seq);
      if (flight->second != seq) return "I2: a failure names another message than its delivery's" + seq_text(seq);
      s.in_flight &= ~bit(handler_of_.at(effect.connection));
      --flights_per_connection_[effect.connection];
      in_flight_.erase(flight);
      ++failures_;
      ++failed_[{seq, handler_of_.at(effect.connection)}];
      return "";
    }
    case Kind::kDeadLetter:
    case Kind::kGaveUp: {
      const std::size_t h = effect.handler;
      const bool retry = effect.kind == Kind::kDeadLetter && retrying_.erase({seq, h}) != 0;
      if (h >= settings_.handlers.size()) return "R10: a dead letter for a handler that does not exist" + seq_text(seq);
      if (!(s.recipients & bit(h))) return "R10: a dead letter for a handler that is not a recipient" + seq_text(seq);
      if (s.confirmed & bit(h)) return "R10: a dead letter of a message the handler confirmed" + seq_text(seq);
      if (trimmed_.count(effect.message))
        return "R18: a dead letter of a copy trimmed to its reply subject" + seq_text(seq);
      if (s.in_flight & bit(h)) return "R10: a dead letter of a message in flight to the handler" + seq_text(seq);
      if (!dead_letters_.insert({seq, h}).second) return "R10: a second dead letter for one handler" + seq_text(seq);
      const RetryPolicy& policy = settings_.handlers.at(h).retry;
      if ((effect.kind == Kind::kDeadLetter) != policy.dead_letter) {
        return "R11: a dead letter for a handler without one, or a give-up for one with one" + seq_text(seq);
      }
      if (!retry && !effect.reason.termed) {
        const auto failed = failed_.find({seq, h});
        const std::uint32_t count = failed == failed_.end() ? 0 : failed->second;
        if (policy.max_attempts == 0 || count < policy.max_attempts || effect.reason.attempts != count) {
          return "R9: a budget used up after " + std::to_string(count) + " failures, not its max_attempts" +
                 seq_text(seq);
        }
      }
      if (effect.kind == Kind::kGaveUp) {
        s.confirmed |= bit(h);
        s.termed |= bit(h);
      } else {
        publishing_[effect.publish] = Publish{seq, h};
      }
      return "";
    }
    case Kind::kWip:
      return "";
    case Kind::kOrderReleased:
      if (effect.handler >= settings_.handlers.size() || !(s.recipients & bit(effect.handler)))
        return "R21: an order release for a handler that is not a recipient" + seq_text(seq);
      return "";
    case Kind::kTrim:
      if (settings_.ack_policy != AckPolicy::kAll)
        return "R18: a trim under an AckPolicy other than all" + seq_text(seq);
      if (!s.unroutable && !all_confirmed(s)) return "R18: a trim before every recipient settled" + seq_text(seq);
      trimmed_.insert(effect.message);
      return "";
    case Kind::kRedriveSettled:
    case Kind::kRedriveDropped:
      return "R41: a redrive's end, for a message of the stream" + seq_text(seq);
    case Kind::kRelease:
      released_.insert(effect.message);
      if (s.live == effect.message) s.live = 0;
      return "";
  }
  return "I1: an effect of no known kind";
}

std::string DispatchChecker::check_order(std::uint64_t seq, std::size_t handler) const {
  const auto keys = order_keys_.find(seq);
  if (keys == order_keys_.end()) return "";
  const auto key = keys->second.find(handler);
  if (key == keys->second.end()) return "";
  for (const auto& [other, other_keys] : order_keys_) {
    if (other == seq) continue;
    const auto other_key = other_keys.find(handler);
    if (other_key == other_keys.end() || other_key->second != key->second) continue;
    const Sequence& s = sequences_.at(other);
    if (s.in_flight & bit(handler)) {
      return "R21: a MSG to an ordered handler while sequence " + std::to_string(other) + " of its key \"" +
             key->second + "\" is in flight to it" + seq_text(seq);
    }
    if (other < seq && s.live != 0 && (s.recipients & bit(handler)) && !(s.confirmed & bit(handler))) {
      return "R21: a MSG to an ordered handler before it settled sequence " + std::to_string(other) + " of its key \"" +
             key->second + "\"" + seq_text(seq);
    }
  }
  return "";
}

std::string DispatchChecker::settle(std::uint64_t seq) {
  if (settings_.ack_policy != AckPolicy::kAll) {
    Sequence& s = sequences_.at(seq);
    s.settled = true;
    s.handed_back = false;
    return "";
  }
  // One verb settles everything up to its sequence at the server.
  for (auto& [below, s] : sequences_) {
    if (below > seq) break;
    const bool never_again =
        s.handed_back && settings_.max_deliver > 0 && s.deliveries >= static_cast<std::uint64_t>(settings_.max_deliver);
    if (never_again) continue;  // the server will not deliver it again: it does not hold back the rest
    if (!all_confirmed(s)) {
      return "R17: under AckPolicy all, a verb for sequence " + std::to_string(seq) + " settles sequence " +
             std::to_string(below) + ", which not every recipient has confirmed";
    }
    s.settled = true;
    s.handed_back = false;
  }
  return "";
}

std::string DispatchChecker::check_state(const DispatchCore& core) const {
  const std::size_t alive = sequence_of_.size() - released_.size();
  if (core.held() != alive) {
    return "I3: held() is " + std::to_string(core.held()) + " but " + std::to_string(alive) +
           " copies are alive (one for each message held)";
  }
  if (core.in_flight() != in_flight_.size()) {
    return "I3: in_flight() is " + std::to_string(core.in_flight()) + " but " + std::to_string(in_flight_.size()) +
           " deliveries were made and not settled, failed or abandoned";
  }
  for (const auto& [key, seq] : in_flight_) {
    if (!connected_.count(key.first)) {
      return "I3: delivery " + std::to_string(key.second) + " is in flight on connection " + std::to_string(key.first) +
             ", which is gone";
    }
    if (!core.is_in_flight(key.first, key.second)) {
      return "I3: the core lost delivery " + std::to_string(key.second) + seq_text(seq) +
             ": neither settled nor failed";
    }
  }
  for (const ConnectionId connection : connected_) {
    if (core.in_flight(connection) > settings_.handlers.at(handler_of_.at(connection)).max_inflight) {
      return "I3: more in flight on connection " + std::to_string(connection) + " than its handler's max_inflight";
    }
  }
  for (const ConnectionId connection : gone_) {
    if (core.in_flight(connection) != 0)
      return "I3: deliveries in flight on closed connection " + std::to_string(connection);
  }
  return "";
}

std::string DispatchChecker::check_end(const DispatchCore& core) const {
  if (std::string broken = check_state(core); !broken.empty()) return broken;
  if (core.held() != 0 || core.in_flight() != 0) return "I4: messages held or in flight at the end";
  if (released_.size() != sequence_of_.size()) return "I4: a copy of a message never released";
  return "";
}

std::vector<std::uint64_t> DispatchChecker::held() const {
  std::vector<std::uint64_t> out;
  for (const auto& [seq, s] : sequences_) {
    if (s.live != 0) out.push_back(seq);
  }
  return out;
}

std::vector<std::uint64_t> DispatchChecker::handed_back() const {
  std::vector<std::uint64_t> out;
  for (const auto& [seq, s] : sequences_) {
    if (s.handed_back && !s.settled && s.live == 0) out.push_back(seq);
  }
  return out;
}

std::vector<std::uint64_t> DispatchChecker::settled_at_server() const {
  std::vector<std::uint64_t> out;
  for (const auto& [seq, s] : sequences_) {
    if (s.settled) out.push_back(seq);
  }
  return out;
}

}  // namespace jetfan
