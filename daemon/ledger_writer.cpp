#include "ledger_writer.hpp"

#include <chrono>

#include "ledger_record.hpp"

namespace jetfan {

LedgerWriter::LedgerWriter(const LedgerConfig& config, std::string durable, Upstream& upstream,
                           RateLimitedLog& warnings)
    : config_(config),
      durable_(std::move(durable)),
      upstream_(upstream),
      warnings_(warnings),
      ledger_(LedgerSettings{config.interval, config.max_in_flight, config.max_records}) {}

void LedgerWriter::load(const std::vector<LedgerRecord>& records, std::uint64_t ack_floor) {
  ledger_.forget_below(ack_floor + 1);
  for (const LedgerRecord& record : records) {
    if (record.seq > ack_floor) ledger_.load(record.seq, record.handlers);
  }
}

void LedgerWriter::confirmed(std::uint64_t seq, std::string_view handler, bool first, TimePoint now) {
  if (ledger_.tracks(seq)) {
    ledger_.confirmed(seq, handler, now);
  } else if (first) {
    if (firsts_.size() >= config_.max_records) {
      ++dropped_firsts_;
      return;
    }
    firsts_.emplace_back(now, seq);
  }
  // A later confirmation of a message not yet tracked is read from the core with the first.
}

void LedgerWriter::write_due(TimePoint now, const ConfirmedNow& confirmed_now) {
  while (!firsts_.empty() && firsts_.front().first + config_.interval <= now) {
    const auto [at, seq] = firsts_.front();
    firsts_.pop_front();
    // Each is handed on as made at the first one's time: the record is due now.
    for (const std::string_view handler : confirmed_now(seq)) ledger_.confirmed(seq, handler, at);
  }
  send(ledger_.take_due(now), now, true);
}

void LedgerWriter::write_all(TimePoint now, const ConfirmedNow& confirmed_now) {
  for (const auto& [at, seq] : firsts_) {
    for (const std::string_view handler : confirmed_now(seq)) ledger_.confirmed(seq, handler, at);
  }
  firsts_.clear();
  send(ledger_.take_all(), now, false);
}

std::optional<TimePoint> LedgerWriter::next_due() const {
  auto due = ledger_.next_due();
  if (!firsts_.empty()) {
    const TimePoint first = firsts_.front().first + config_.interval;
    if (!due || first < *due) due = first;
  }
  return due;
}

void LedgerWriter::send(std::vector<LedgerChange> changes, TimePoint now, bool answered) {
  for (LedgerChange& change : changes) {
    const std::uint64_t id = next_id_++ | kIdBit;
    const std::string subject = jetstream::ledger_subject(config_.bucket, durable_, change.seq);
    const bool put = change.kind == LedgerChange::Kind::kPut;
    const std::string value = put ? jetstream::ledger_value(change.handlers) : std::string();
    if (!upstream_.publish(id, subject, put ? std::string_view() : jetstream::kLedgerDeleteHeaders, value)) {
      failed(change, "it could not be sent (not connected to the server)", now);
      continue;
    }
    if (!answered) continue;
    sent_order_.emplace_back(now, id);
    sent_.emplace(id, Sent{std::move(change), now});
  }
}

void LedgerWriter::on_published(std::uint64_t id, const PublishResult& result, TimePoint now) {
  const auto found = sent_.find(id);
  if (found == sent_.end()) return;  // timed out before
  const LedgerChange change = std::move(found->second.change);
  sent_.erase(found);
  if (!result.stored) {
    failed(change, result.no_stream ? "no stream takes it: is the bucket gone?" : result.error, now);
    return;
  }
  failing_since_.reset();
  ledger_.written(change, true, now);
}

void LedgerWriter::time_out(TimePoint now) {
  while (!sent_order_.empty() && now - sent_order_.front().first >= kAnswerTimeout) {
    const std::uint64_t id = sent_order_.front().second;
    sent_order_.pop_front();
    const auto found = sent_.find(id);
    if (found == sent_.end()) continue;  // answered
    const LedgerChange change = std::move(found->second.change);
    sent_.erase(found);
    failed(change, "the server did not answer", now);
  }
  // Answered ids leave their place in sent_order_ behind; it is emptied as they reach the front.
}

void LedgerWriter::failed(const LedgerChange& change, std::string_view why, TimePoint now) {
  if (!failing_since_) failing_since_ = now;
  last_error_ = std::string(why);
  ledger_.written(change, false, now);
  warnings_.warn(now, "ledger writes failing", "ledger.write_failed",
                 {{"bucket", config_.bucket}, {"seq", change.seq}, {"reason", last_error_}},
                 "ledger: the record of stream seq {} was not {} in bucket \"{}\": {}. It is tried again; until it "
                 "is, a restart may give the message again to handlers that confirmed it (a duplicate, never a loss)",
                 change.seq, change.kind == LedgerChange::Kind::kPut ? "written" : "deleted", config_.bucket,
                 last_error_);
}

std::string LedgerWriter::not_written(TimePoint now) const {
  if (!failing_since_) return {};
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(now - *failing_since_).count();
  return "writes failing for " + std::to_string(seconds) + " s: " + last_error_;
}

StatusSnapshot::Ledger LedgerWriter::view(TimePoint now) const {
  const LedgerCounts& counts = ledger_.counts();
  StatusSnapshot::Ledger out;
  out.bucket = config_.bucket;
  out.interval_seconds = std::chrono::duration<double>(config_.interval).count();
  out.puts = counts.puts;
  out.deletes = counts.deletes;
  out.failed = counts.failed;
  out.dropped = counts.dropped + dropped_firsts_;
  out.loaded = counts.loaded;
  out.tracked = ledger_.tracked() + firsts_.size();
  out.waiting = ledger_.waiting_for_server();
  out.not_written = not_written(now);
  return out;
}

}  // namespace jetfan
