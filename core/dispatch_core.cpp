#include "dispatch_core.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <functional>
#include <limits>

namespace jetfan {

const char* to_string(FailCause cause) {
  switch (cause) {
    case FailCause::kNak:
      return "the handler sent NAK";
    case FailCause::kTimeout:
      return "no ACK, NAK, TERM or WIP within its ack_timeout";
    case FailCause::kDisconnect:
      return "the handler disconnected with it unconfirmed";
  }
  return "?";
}

DispatchCore::DispatchCore(CoreSettings settings) : settings_(std::move(settings)), settled_(settings_.remember) {
  assert(settings_.handlers.size() <= kMaxHandlers);
  assert(settings_.keepalive > Duration(0));
  for (const auto& limits : settings_.handlers) handlers_.push_back(Handler{limits, {}, {}, {}, bucket_for(limits)});
  gate_ = OrderGate(handlers_.size());
}

AdaptiveLimit DispatchCore::limit_for(const HandlerLimits& limits) {
  if (!limits.adaptive_inflight) return AdaptiveLimit(limits.max_inflight);
  return AdaptiveLimit(std::clamp<std::uint32_t>(limits.min_inflight, 1, limits.max_inflight), limits.max_inflight);
}

void DispatchCore::adapt_limit(Connection& connection, Outcome outcome, const Flight& flight, std::size_t in_flight,
                               TimePoint now) {
  AdaptiveLimit& limit = connection.limit;
  if (!limit.adaptive()) return;
  std::optional<AdaptiveLimit::Cut> cut;
  switch (outcome) {
    case Outcome::kAck:
    case Outcome::kTerm:
      cut = limit.confirmed(now - flight.sent, in_flight, flight.kept_alive, now);
      break;
    case Outcome::kNak:
      cut = limit.failed(AdaptiveLimit::Cut::kNak, in_flight, now);
      break;
    case Outcome::kTimeout:
      cut = limit.failed(AdaptiveLimit::Cut::kTimeout, in_flight, now);
      break;
  }
  if (cut) ++handlers_[connection.handler].stats.inflight_cuts[static_cast<std::size_t>(*cut)];
}

TokenBucket DispatchCore::bucket_for(const HandlerLimits& limits) {
  if (limits.max_rate <= 0) return {};
  return TokenBucket(limits.max_rate, TokenBucket::burst_for(limits.max_rate));
}

void DispatchCore::emit(Effect::Kind kind, MessageHandle handle, Duration delay) {
  effects_.push_back(Effect{kind, handle, 0, 0, delay});
}

std::size_t DispatchCore::in_flight() const {
  std::size_t total = 0;
  for (const auto& [id, connection] : connections_) total += connection.flights.size();
  return total;
}

std::size_t DispatchCore::in_flight(ConnectionId connection) const {
  auto found = connections_.find(connection);
  return found == connections_.end() ? 0 : found->second.flights.size();
}

bool DispatchCore::is_in_flight(ConnectionId connection, DeliveryId delivery) const {
  auto found = connections_.find(connection);
  return found != connections_.end() && found->second.flights.count(delivery) != 0;
}

std::optional<std::uint64_t> DispatchCore::seq_in_flight(ConnectionId connection, DeliveryId delivery) const {
  const auto found = connections_.find(connection);
  if (found == connections_.end()) return std::nullopt;
  const auto flight = found->second.flights.find(delivery);
  if (flight == found->second.flights.end()) return std::nullopt;
  return flight->second.stream_seq;
}

void DispatchCore::remember_confirmed(std::uint64_t seq, HandlerMask settled) {
  if (settled == 0 || messages_.contains(seq)) return;
  Message known;
  if (const auto found = confirmations_.find(seq); found != confirmations_.end()) {
    known.settled = found->second.settled;
    known.termed = found->second.termed;
    known.poison = found->second.poison;
  }
  known.settled |= settled;
  remember(seq, known);
}

HandlerMask DispatchCore::confirmed_before(std::uint64_t seq) const {
  if (const auto held = messages_.find(seq); held != messages_.end()) return held->second.settled;
  if (const auto known = confirmations_.find(seq); known != confirmations_.end()) return known->second.settled;
  return 0;
}

std::vector<HandlerLoad> DispatchCore::loads() const {
  std::vector<HandlerLoad> loads(handlers_.size());
  for (std::size_t h = 0; h < handlers_.size(); ++h) {
    loads[h].connections = handlers_[h].connections.size();
    loads[h].rate_waiting = handlers_[h].rate_waiting;
    for (const ConnectionId id : handlers_[h].connections) {
      const Connection& connection = connections_.at(id);
      loads[h].in_flight += connection.flights.size();
      loads[h].inflight_limit += connection.limit.limit();
      if (connection.limit.last_cut() &&
          (!loads[h].last_cut || connection.limit.last_cut_at() > loads[h].last_cut_at)) {
        loads[h].last_cut = connection.limit.last_cut();
        loads[h].last_cut_at = connection.limit.last_cut_at();
      }
    }
  }
  for (const auto& [seq, message] : messages_) {
    const HandlerMask owed = message.recipients & ~message.settled;
    for (std::size_t h = 0; h < handlers_.size(); ++h) {
      const HandlerMask bit = HandlerMask{1} << h;
      if (!(owed & bit)) continue;
      ++loads[h].owed;
      if (message.queued & bit) ++loads[h].queued;
      auto& oldest = loads[h].oldest_unconfirmed;
      if (!oldest || message.arrived < *oldest) oldest = message.arrived;
    }
  }
  return loads;
}

std::optional<TimePoint> DispatchCore::oldest_held() const {
  std::optional<TimePoint> oldest;
  for (const auto& [seq, message] : messages_) {
    if (!oldest || message.arrived < *oldest) oldest = message.arrived;
  }
  return oldest;
}

Duration DispatchCore::backoff(std::uint64_t deliveries) const {
  Duration delay = settings_.nak_delay;
  for (std::uint64_t i = 1; i < deliveries && delay < settings_.nak_delay_max; ++i) delay *= 2;
  return std::min(delay, settings_.nak_delay_max);
}

Duration DispatchCore::handback_delay(TimePoint now) const {
  if (handback_until_ <= now) return Duration(0);
  return std::chrono::ceil<Duration>(handback_until_ - now);
}

void DispatchCore::arrive(const Arrival& arrival, TimePoint now) {
  // The last of what an earlier reader left outstanding ends the wait only once it is in the gate
  // itself, so that it still goes before the later messages of its key.
  if (const std::uint64_t lost = gap_.check(arrival.consumer_seq, arrival.wall_ns, now); lost > 0) {
    ++counters_.delivery_gaps;
    counters_.deliveries_lost += lost;
  }
  const bool last_outstanding = restart_ && restart_->arrived(arrival.stream_seq);
  arrive_one(arrival, now);
  if (last_outstanding) restart_end(now);
  if (floor_hold_ && floor_hold_->arrived(arrival.stream_seq)) floor_hold_end();
  if (restart_ && restart_->proof().by_store(arrival.published_ns, now)) restart_end(now);
  if (floor_hold_ && floor_hold_->proof().by_store(arrival.published_ns, now)) floor_hold_end();
  const bool first = arrival.deliveries == 1 && !arrival.unroutable && arrival.stream_seq != 0;
  gap_ended(gap_.arrived(arrival.stream_seq, first, arrival.published_ns, now), now);
}

void DispatchCore::bound(std::uint64_t consumer_seq, std::uint64_t stream_seq) { gap_.bound(consumer_seq, stream_seq); }

void DispatchCore::heard(TimePoint asked_at, TimePoint now) {
  gap_ended(gap_.heard(asked_at, now), now);
  if (restart_ && restart_->proof().by_answer(asked_at, now)) restart_end(now);
  if (floor_hold_ && floor_hold_->proof().by_answer(asked_at, now)) floor_hold_end();
}

void DispatchCore::gap_ended(std::optional<DeliveryGap::End> why, TimePoint now) {
  if (!why) return;
  if (*why == DeliveryGap::End::kLetGo) ++counters_.gap_holds_let_go;
  advance_ack_floor();
  std::vector<bool> touched(handlers_.size(), false);
  release_gated(touched);
  for (std::size_t h = 0; h < touched.size(); ++h) {
    if (touched[h]) dispatch(h, now);
  }
}

void DispatchCore::arrive_one(const Arrival& arrival, TimePoint now) {
  ++counters_.arrived;
  if (arrival.deliveries > 1) ++counters_.redelivered;
  if (!next_keepalive_) next_keepalive_ = now + settings_.keepalive;
  if (arrival.unroutable) {
    ++counters_.unroutable;
    if (settings_.ack_policy == AckPolicy::kAll) {
      // +TERM would settle everything below it too. Without a sequence it cannot wait its turn: the
      // server redelivers it after AckWait, until MaxDeliver.
      if (floor_.copy(arrival.stream_seq, arrival.message, now, effects_)) {
        ++counters_.already_held;
        return;
      }
      if (arrival.stream_seq != 0) {
        floor_.settle(arrival.stream_seq, arrival.message, true, now, floor_ceiling(), effects_);
        return;
      }
    } else if (to_server()) {
      emit(Effect::Kind::kTerm, arrival.message);
    }
    emit(Effect::Kind::kRelease, arrival.message);
    return;
  }
  const std::uint64_t seq = arrival.stream_seq;
  assert(seq != 0);

  // The server delivered again a message still held (its AckWait ran out before our +WPI arrived,
  // or it restarted). Keep the state we have and answer on the newest copy.
  if (auto held = messages_.find(seq); held != messages_.end()) {
    ++counters_.already_held;
    emit(Effect::Kind::kRelease, held->second.handle);
    held->second.handle = arrival.message;
    held->second.deliveries = arrival.deliveries;
    held->second.touched = now;
    return;
  }
  if (floor_.copy(seq, arrival.message, now, effects_)) {
    ++counters_.already_held;
    return;
  }

  if (const auto verb = settled_.find(seq)) {
    arrive_copy_of_settled(arrival, *verb, now);
    return;
  }

  if (stepping_aside()) {
    // Shutting down, or standing by: hand it straight back, for the reader that serves.
    if (to_server()) emit(Effect::Kind::kNak, arrival.message, handback_delay(now));
    ++counters_.nakked;
    emit(Effect::Kind::kRelease, arrival.message);
    return;
  }

  Message message;
  message.handle = arrival.message;
  message.deliveries = std::max<std::uint64_t>(arrival.deliveries, 1);
  message.recipients = arrival.recipients;
  message.touched = now;
  message.arrived = now;
  if (auto known = confirmations_.find(seq); known != confirmations_.end()) {
    message.settled = known->second.settled & arrival.recipients;
    counters_.skipped_confirmed += static_cast<std::uint64_t>(std::popcount(message.settled));
    message.termed = known->second.termed & arrival.recipients;
    message.poison = known->second.poison;
  }
  if (arrival.recipients == 0) ++counters_.no_recipient;
  message.queued = arrival.recipients & ~message.settled;
  order_arrived(arrival, message, now);
  if (settings_.ack_policy == AckPolicy::kAll) floor_.held(seq);
  messages_.emplace(seq, message);
  budget_.held_again(seq);
  if (message.queued == 0) {
    maybe_finish(seq, now);
    return;
  }
  for (std::size_t h = 0; h < handlers_.size(); ++h) {
    if (message.queued & (HandlerMask{1} << h)) {
      handlers_[h].queue.push_back(seq);
      dispatch(h, now);
    }
  }
}

void DispatchCore::arrive_copy_of_settled(const Arrival& arrival, SettledRecord::Verb verb, TimePoint now) {
  ++counters_.already_settled;
  const bool terminate = verb == SettledRecord::Verb::kTerminated;
  if (settings_.ack_policy == AckPolicy::kAll) {
    if (const std::uint64_t ceiling = floor_ceiling(); floor_.must_wait(arrival.stream_seq, ceiling)) {
      // Either verb now would also settle a lower sequence still unsettled: it waits its turn.
      floor_.settle(arrival.stream_seq, arrival.message, terminate, now, ceiling, effects_);
      return;
    }
  }
  if (to_server()) emit(terminate ? Effect::Kind::kTerm : Effect::Kind::kAck, arrival.message);
  emit(Effect::Kind::kRelease, arrival.message);
}

void DispatchCore::dispatch(std::size_t handler_index, TimePoint now) {
  Handler& handler = handlers_[handler_index];
  handler.rate_waiting = false;
  if (stepping_aside() || handler.limits.paused) return;
  const HandlerMask bit = HandlerMask{1} << handler_index;
  while (!handler.queue.empty()) {
    // The instance with the most room; with equal limits (no adaptive_inflight), the least loaded.
    Connection* least = nullptr;
    ConnectionId least_id = 0;
    std::size_t most_room = 0;
    for (const ConnectionId id : handler.connections) {
      Connection& candidate = connections_.at(id);
      const std::size_t limit = candidate.limit.limit();
      if (candidate.flights.size() >= limit) continue;
      if (const std::size_t room = limit - candidate.flights.size(); room > most_room) {
        least = &candidate;
        least_id = id;
        most_room = room;
      }
    }
    if (!least) return;
    if (!handler.rate.ready(now)) {
      handler.rate_waiting = true;  // tick() goes on once the next token is whole
      return;
    }
    const std::uint64_t seq = handler.queue.front();
    handler.queue.pop_front();
    auto found = messages_.find(seq);
    if (found == messages_.end() || !(found->second.queued & bit)) continue;  // stale entry
    Message& message = found->second;
    if (!order_admits(handler_index, seq, message)) continue;
    message.queued &= ~bit;
    message.in_flight |= bit;
    handler.rate.take();
    const DeliveryId delivery = next_delivery_++;
    const TimePoint deadline = now + handler.limits.ack_timeout;
    least->flights.emplace(delivery, Flight{seq, deadline, now});
    push_deadline(Deadline{deadline, least_id, delivery});
    ++counters_.deliveries;
    ++handler.stats.delivered;
    order_delivered(handler_index, seq, message);
    effects_.push_back(Effect{Effect::Kind::kDeliver, message.handle, least_id, delivery, Duration(0)});
    effects_.back().deliveries = budget_.deliveries_to(seq, handler_index, message.deliveries);
  }
}

void DispatchCore::connect(ConnectionId connection, std::size_t handler, TimePoint now) {
  assert(handler < handlers_.size());
  connections_.emplace(connection, Connection{handler, std::pmr::unordered_map<DeliveryId, Flight>(&pool_),
                                              limit_for(handlers_[handler].limits)});
  handlers_[handler].connections.push_back(connection);
  dispatch(handler, now);
}

void DispatchCore::disconnect(ConnectionId connection_id, TimePoint now) {
  auto found = connections_.find(connection_id);
  if (found == connections_.end()) return;
  const std::size_t handler = found->second.handler;
  auto& list = handlers_[handler].connections;
  list.erase(std::remove(list.begin(), list.end(), connection_id), list.end());
  const auto flights = std::move(found->second.flights);
  connections_.erase(found);
  if (list.empty()) stop_waiting_for(handler, now);
  for (const auto& [delivery, flight] : flights) {
    auto message = messages_.find(flight.stream_seq);
    if (message == messages_.end()) continue;
    ++counters_.failed_disconnect;
    ++handlers_[handler].stats.failed_disconnect;
    effects_.push_back(Effect{Effect::Kind::kFailed, message->second.handle, connection_id, delivery, Duration(0),
                              FailCause::kDisconnect});
    message->second.in_flight &= ~(HandlerMask{1} << handler);
    failed_attempt(flight.stream_seq, message->second, handler, FailCause::kDisconnect, std::nullopt, now);
    order_ended(handler, flight.stream_seq, message->second,
                (message->second.settled & (HandlerMask{1} << handler)) != 0);
    maybe_finish(flight.stream_seq, now);
  }
}

void DispatchCore::stop_waiting_for(std::size_t handler, TimePoint now) {
  // maybe_finish() does not wait for a handler with no instance or paused (waits_for_an_instance),
  // so the messages queued for it that another recipient failed can be handed back now.
  std::vector<std::uint64_t> waiting;
  for (const std::uint64_t seq : handlers_[handler].queue) {
    auto message = messages_.find(seq);
    if (message != messages_.end() && message->second.failed != 0 && message->second.in_flight == 0) {
      waiting.push_back(seq);
    }
  }
  for (const std::uint64_t seq : waiting) {
    if (messages_.count(seq)) maybe_finish(seq, now);
  }
}

void DispatchCore::set_paused(std::size_t handler, bool paused, TimePoint now) {
  Handler& h = handlers_[handler];
  if (h.limits.paused == paused) return;
  h.limits.paused = paused;
  settings_.handlers[handler].paused = paused;
  if (paused) {
    stop_waiting_for(handler, now);  // as when its last instance goes
  } else {
    dispatch(handler, now);
  }
}

void DispatchCore::fail(Message& message, std::size_t handler, std::optional<Duration> delay) {
  message.failed |= HandlerMask{1} << handler;
  message.nak_delay = std::max(message.nak_delay, delay ? *delay : backoff(message.deliveries + message.retries));
}

std::optional<DispatchCore::FlightRef> DispatchCore::find_flight(ConnectionId connection_id, DeliveryId delivery) {
  auto connection = connections_.find(connection_id);
  if (connection == connections_.end()) return std::nullopt;
  auto flight = connection->second.flights.find(delivery);
  if (flight == connection->second.flights.end()) {
    ++counters_.unknown_confirmations;
    return std::nullopt;
  }
  return FlightRef{&connection->second, flight};
}

bool DispatchCore::complete(ConnectionId connection_id, DeliveryId delivery, Outcome outcome,
                            std::optional<Duration> delay, TimePoint now) {
  const auto found = find_flight(connection_id, delivery);
  if (!found) return false;
  const std::uint64_t seq = found->flight->second.stream_seq;
  const TimePoint sent = found->flight->second.sent;
  const std::size_t handler = found->connection->handler;
  adapt_limit(*found->connection, outcome, found->flight->second, found->connection->flights.size(), now);
  found->connection->flights.erase(found->flight);
  Message& message = messages_.at(seq);
  const HandlerMask bit = HandlerMask{1} << handler;
  message.in_flight &= ~bit;
  HandlerStats& stats = handlers_[handler].stats;
  switch (outcome) {
    case Outcome::kAck:
      message.settled |= bit;
      ++stats.acked;
      stats.confirmation_latency.observe(now - sent);
      stats.attempts.observe(budget_.attempts(seq, handler) + 1);
      break;
    case Outcome::kTerm:
      ++stats.termed;
      stats.confirmation_latency.observe(now - sent);
      if (dead_letter_term(seq, message, handler)) break;
      message.settled |= bit;
      message.termed |= bit;
      stats.attempts.observe(budget_.attempts(seq, handler) + 1);
      break;
    case Outcome::kNak:
      effects_.push_back(Effect{Effect::Kind::kFailed, message.handle, connection_id, delivery,
                                delay.value_or(Duration(-1)), FailCause::kNak});
      failed_attempt(seq, message, handler, FailCause::kNak, delay, now);
      ++stats.failed_nak;
      stats.confirmation_latency.observe(now - sent);
      break;
    case Outcome::kTimeout:
      effects_.push_back(
          Effect{Effect::Kind::kFailed, message.handle, connection_id, delivery, Duration(0), FailCause::kTimeout});
      failed_attempt(seq, message, handler, FailCause::kTimeout, delay, now);
      ++stats.failed_timeout;
      break;
  }
  order_ended(handler, seq, message, (message.settled & bit) != 0);
  maybe_finish(seq, now);
  dispatch(handler, now);
  return true;
}

bool DispatchCore::ack(ConnectionId connection, DeliveryId delivery, TimePoint now) {
  return complete(connection, delivery, Outcome::kAck, std::nullopt, now);
}

bool DispatchCore::nak(ConnectionId connection, DeliveryId delivery, std::optional<Duration> delay, TimePoint now) {
  const bool known = complete(connection, delivery, Outcome::kNak, delay, now);
  if (known) ++counters_.failed_nak;
  return known;
}

bool DispatchCore::term(ConnectionId connection, DeliveryId delivery, TimePoint now) {
  return complete(connection, delivery, Outcome::kTerm, std::nullopt, now);
}

bool DispatchCore::wip(ConnectionId connection_id, DeliveryId delivery, TimePoint now) {
  const auto found = find_flight(connection_id, delivery);
  if (!found) return false;
  Flight& flight = found->flight->second;
  flight.kept_alive = true;
  flight.deadline = now + handlers_[found->connection->handler].limits.ack_timeout;
  push_deadline(Deadline{flight.deadline, connection_id, delivery});
  return true;
}

void DispatchCore::maybe_finish(std::uint64_t seq, TimePoint now) {
  auto found = messages_.find(seq);
  Message& message = found->second;
  if (message.in_flight != 0 || budget_.publishing(seq)) return;
  if (is_redrive(seq)) {
    finish_redrive(seq, message, now);
    return;
  }
  // Recipients waiting for room on a connected instance get the message soon: wait for them. One
  // waiting for an instance at all may wait for ever, so a failure elsewhere does not wait for it.
  if (message.queued != 0 && !stepping_aside() && (message.failed == 0 || !waits_for_an_instance(message.queued))) {
    return;
  }
  if (!stepping_aside() && order_holds(seq, message, now)) return;
  if ((message.failed | message.queued | message.gated) != 0) {
    hand_back(seq, message, now);
    return;
  }
  const bool terminate = message.termed != 0 || message.poison;
  const MessageHandle handle = message.handle;
  const TimePoint touched = message.touched;
  messages_.erase(found);
  confirmations_.erase(seq);
  budget_.forget(seq);
  settle_at_server(seq, handle, terminate, touched);
}

bool DispatchCore::waits_for_an_instance(HandlerMask queued) const {
  for (std::size_t h = 0; h < handlers_.size(); ++h) {
    if ((queued & (HandlerMask{1} << h)) && (handlers_[h].connections.empty() || handlers_[h].limits.paused)) {
      return true;
    }
  }
  return false;
}

void DispatchCore::hand_back(std::uint64_t seq, Message& message, TimePoint now) {
  const MessageHandle handle = message.handle;
  const Duration delay = stepping_aside() ? handback_delay(now) : message.nak_delay;
  if (to_server()) emit(Effect::Kind::kNak, handle, delay);
  ++counters_.nakked;
  remember(seq, message);
  budget_.handed_back(seq);
  const bool last_delivery =
      settings_.max_deliver > 0 && message.deliveries >= static_cast<std::uint64_t>(settings_.max_deliver);
  order_handed_back(seq, message, delay, last_delivery, now);
  messages_.erase(seq);
  emit(Effect::Kind::kRelease, handle);
  if (settings_.ack_policy == AckPolicy::kAll && last_delivery) {
    // The server will not deliver it again, so it must not hold back the ack floor.
    floor_.gone(seq, floor_ceiling(), effects_);
  }
}

void DispatchCore::settle_at_server(std::uint64_t seq, MessageHandle handle, bool terminate, TimePoint touched) {
  if (terminate) {
    ++counters_.terminated;
  } else {
    ++counters_.acked;
  }
  if (to_server()) settled_.add(seq, terminate ? SettledRecord::Verb::kTerminated : SettledRecord::Verb::kAcked);
  if (settings_.ack_policy == AckPolicy::kAll) {
    floor_.settle(seq, handle, terminate, touched, floor_ceiling(), effects_);
    return;
  }
  if (to_server()) emit(terminate ? Effect::Kind::kTerm : Effect::Kind::kAck, handle);
  emit(Effect::Kind::kRelease, handle);
}

void DispatchCore::remember(std::uint64_t seq, const Message& message) {
  if (settings_.remember == 0 || (message.settled == 0 && !message.poison)) {
    confirmations_.erase(seq);
    return;
  }
  const std::uint64_t stamp = ++confirmations_stamp_;
  confirmations_[seq] = Confirmations{message.settled, message.termed, stamp, message.poison};
  confirmations_order_.emplace_back(seq, stamp);
  while (confirmations_.size() > settings_.remember && !confirmations_order_.empty()) {
    const auto [oldest, oldest_stamp] = confirmations_order_.front();
    confirmations_order_.pop_front();
    auto entry = confirmations_.find(oldest);
    if (entry != confirmations_.end() && entry->second.stamp == oldest_stamp) confirmations_.erase(entry);
  }
  // Entries for sequences settled later linger in confirmations_order_; compact now and then.
  if (confirmations_order_.size() > 2 * settings_.remember + 1024) {
    std::erase_if(confirmations_order_, [this](const auto& entry) {
      auto found = confirmations_.find(entry.first);
      return found == confirmations_.end() || found->second.stamp != entry.second;
    });
  }
}

std::size_t DispatchCore::hand_back_for_room(std::size_t handler, std::size_t keep, TimePoint now) {
  const HandlerMask bit = HandlerMask{1} << handler;
  std::size_t owed = 0;
  std::vector<std::uint64_t> idle;     // owed, and nothing in flight for it anywhere
  std::vector<std::uint64_t> ordered;  // of those, the ones it gets by an order key
  for (const auto& [seq, message] : messages_) {
    if (!((message.recipients & ~message.settled) & bit) || is_redrive(seq)) continue;  // redrives: not the stream's
    ++owed;
    if (message.in_flight == 0 && !budget_.publishing(seq)) ((message.ordered & bit) ? ordered : idle).push_back(seq);
  }
  if (owed <= keep) return 0;
  // Unordered, the oldest go first. Ordered, the newest: an older message away would hold the later
  // ones of its key, and should it not be back within order_away_hold (jetfan full meanwhile, after
  // a restart say), they would go before it; a newer one away holds only what comes after it, so its
  // key's order holds whenever it comes back.
  std::sort(idle.begin(), idle.end());
  std::sort(ordered.begin(), ordered.end(), std::greater<>());
  idle.insert(idle.end(), ordered.begin(), ordered.end());
  std::size_t handed = 0;
  for (const std::uint64_t seq : idle) {
    if (owed <= keep) break;
    auto found = messages_.find(seq);
    if (found == messages_.end()) continue;
    Message& message = found->second;
    message.queued &= ~bit;  // its entry in the handler's queue is skipped from now on
    // Back soon, it would take the room it just freed before any new message could: it stays away
    // as long as any failure may, and new messages flow meanwhile.
    fail(message, handler, settings_.nak_delay_max);
    ++counters_.handed_back_for_room;
    ++handed;
    --owed;
    if ((message.ordered & ~message.settled) != 0) {
      hand_back(seq, message, now);  // the room is the point; its key waits for it (order_away_hold)
      continue;
    }
    maybe_finish(seq, now);
  }
  return handed;
}

void DispatchCore::forget_history() {
  confirmations_.clear();
  confirmations_order_.clear();
  settled_.clear();
  budget_.forget_handed_back();
  gap_.new_consumer();
}

void DispatchCore::tick(TimePoint now) {
  while (!deadlines_.empty() && deadlines_.top().at <= now) {
    const Deadline due = deadlines_.top();
    deadlines_.pop();
    auto connection = connections_.find(due.connection);
    if (connection == connections_.end()) continue;
    auto flight = connection->second.flights.find(due.delivery);
    if (flight == connection->second.flights.end() || flight->second.deadline != due.at) continue;
    ++counters_.failed_timeout;
    complete(due.connection, due.delivery, Outcome::kTimeout, std::nullopt, now);
  }
  order_tick(now);
  for (std::size_t h = 0; h < handlers_.size(); ++h) {
    if (handlers_[h].rate_waiting) dispatch(h, now);
  }
  retry_dead_letters(now);
  if (floor_hold_ && now >= floor_hold_->until()) floor_hold_end();
  gap_ended(gap_.tick(now), now);
  if (next_keepalive_ && *next_keepalive_ <= now) {
    next_keepalive_ = now + settings_.keepalive;
    // A standby keeps nothing alive (R47): what it still has in flight goes to the pinned reader
    // after AckWait unless confirmed first, and so ends that reader's restart hold in order.
    if (to_server() && !standing_by_) {
      const TimePoint stale = now - settings_.keepalive;
      for (auto& [seq, message] : messages_) {
        if (message.touched <= stale && !is_redrive(seq)) {
          emit(Effect::Kind::kWip, message.handle);
          message.touched = now;
        }
      }
      floor_.touch(stale, now, effects_);
    }
  }
}

void DispatchCore::extend_deadlines(Duration stalled) {
  if (stalled > Duration(0)) rebuild_deadlines(stalled);
}

void DispatchCore::push_deadline(const Deadline& deadline) {
  deadlines_.push(deadline);
  // A delivery confirmed in time leaves its entry behind until ack_timeout has passed: at 100,000
  // deliveries a second and 30 s, three million of them. Rebuilding once the queue is twice what
  // is in flight costs O(1) per push, amortized, and bounds it by the flights.
  if (deadlines_.size() >= rebuild_deadlines_at_) rebuild_deadlines(Duration(0));
}

void DispatchCore::rebuild_deadlines(Duration shift) {
  std::vector<Deadline> live;
  live.reserve(in_flight());
  for (auto& [id, connection] : connections_) {
    for (auto& [delivery, flight] : connection.flights) {
      flight.deadline += shift;  // every flight moves alike, so the order stays
      live.push_back(Deadline{flight.deadline, id, delivery});
    }
  }
  deadlines_ = decltype(deadlines_)(std::greater<>(), std::move(live));
  rebuild_deadlines_at_ = std::max(kMinDeadlineRebuild, 2 * deadlines_.size());
}

std::optional<TimePoint> DispatchCore::next_wakeup() const {
  std::optional<TimePoint> wake;
  if (!deadlines_.empty()) wake = deadlines_.top().at;
  if (next_keepalive_ && held() > 0 && (!wake || *next_keepalive_ < *wake)) wake = next_keepalive_;
  if (const auto order = order_next_wakeup(); order && (!wake || *order < *wake)) wake = order;
  if (const auto retry = budget_.next_retry(); retry && (!wake || *retry < *wake)) wake = retry;
  if (floor_hold_ && (!wake || floor_hold_->until() < *wake)) wake = floor_hold_->until();
  if (const auto let_go = gap_.let_go_at(); let_go && (!wake || *let_go < *wake)) wake = let_go;
  for (const Handler& handler : handlers_) {
    if (!handler.rate_waiting) continue;
    if (const auto token = handler.rate.next_token(); token && (!wake || *token < *wake)) wake = token;
  }
  return wake;
}

void DispatchCore::begin_drain(TimePoint now, Duration handback_delay) {
  draining_ = true;
  handback_until_ = now + handback_delay;
  std::vector<std::uint64_t> idle;
  for (const auto& [seq, message] : messages_) {
    if (message.in_flight == 0) idle.push_back(seq);
  }
  // In stream order, so that the next reader is likeliest to get the messages of a key oldest first.
  std::sort(idle.begin(), idle.end());
  for (const std::uint64_t seq : idle) maybe_finish(seq, now);
}

void DispatchCore::stand_by(TimePoint now, Duration handback_delay) {
  if (standing_by_ || draining_) return;
  standing_by_ = true;
  handback_until_ = now + handback_delay;
  std::vector<std::uint64_t> idle;
  for (const auto& [seq, message] : messages_) {
    if (message.in_flight == 0) idle.push_back(seq);
  }
  std::sort(idle.begin(), idle.end());  // as in begin_drain
  for (const std::uint64_t seq : idle) maybe_finish(seq, now);
}

void DispatchCore::resume(TimePoint now) {
  if (!standing_by_) return;
  standing_by_ = false;
  // Another reader had the deliveries meanwhile: the next arrival's number is taken as it is.
  gap_.new_consumer();
  for (std::size_t h = 0; h < handlers_.size(); ++h) dispatch(h, now);
}

void DispatchCore::abandon_all(TimePoint now) {
  assert(draining_);
  for (auto& [id, connection] : connections_) {
    for (const auto& [delivery, flight] : connection.flights) {
      auto message = messages_.find(flight.stream_seq);
      if (message == messages_.end()) continue;
      message->second.in_flight &= ~(HandlerMask{1} << connection.handler);
      message->second.failed |= HandlerMask{1} << connection.handler;
    }
    connection.flights.clear();
  }
  abandon_dead_letters();
  std::vector<std::uint64_t> left;
  for (const auto& [seq, message] : messages_) left.push_back(seq);
  std::sort(left.begin(), left.end());  // as in begin_drain
  for (const std::uint64_t seq : left) maybe_finish(seq, now);
  // AckPolicy all: settled, but something below will never be settled by this reader now.
  counters_.nakked += floor_.waiting();
  floor_.abandon(handback_delay(now), effects_);
}

}  // namespace jetfan
