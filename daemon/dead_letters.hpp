#pragma once
// DeadLetters: what the dispatcher publishes when a handler gives a message up (the core's
// Effect::Kind::kDeadLetter), and the publishes still waiting for JetStream's acknowledgement.
//
// A dead letter is the message as it came (its payload byte for byte, its headers name for name,
// value for value, in their order; a Jetfan-* header it already had is replaced) plus:
//   Jetfan-Handler     the handler that gave it up
//   Jetfan-Reason      "TERM", or "max_attempts 5 used up; last: ack_timeout"
//   Jetfan-Attempts    the deliveries to that handler that failed
//   Jetfan-Subject     the subject it was published on
//   Jetfan-Stream      the stream, Jetfan-Sequence its sequence there, Jetfan-Consumer the durable
//   Jetfan-Deliveries  how often the server had delivered it
//   Jetfan-Time        when the stream stored it (RFC 3339, UTC), if the server said
// and, first of all, jetfan's own Nats-Msg-Id (dedup_id below): a publish tried again after its
// answer was lost, or by the next jetfan after a crash, is then stored once within the stream's
// duplicate window. The message's own Nats-Msg-Id stays, after it (the server reads the first); so
// two handlers' dead letters of one message are two, never one taken for the other's duplicate.
// The names are in docs/OPERATING.md ("Dead letters").
//
// A publish with no answer within `timeout` (the connection went, the server never answered)
// counts as failed: the core tries it again, so nothing waits for ever.
//
// Thread: the io_context thread.

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "time.hpp"

namespace jetfan {

struct DeadLetterFacts {
  std::string_view handler;
  std::string reason;
  std::uint32_t attempts = 0;
  std::string_view subject;
  std::string_view stream;
  std::uint64_t stream_seq = 0;
  std::string_view consumer;
  std::uint64_t deliveries = 0;
  std::uint64_t published_ns = 0;   // 0: not known
  std::uint64_t redriven_from = 0;  // a redrive's: the sequence of the dead letter it redrove; else 0
};

// "jetfan:<stream>:<consumer>:<stream_seq>:<handler>", and ":redrive:<redriven_from>" for a
// redrive's dead letter: one id per message, module and handler (per redrive), whichever jetfan or
// budget gave it up. (The consumer keeps apart two modules' handlers of one name that share a
// dead-letter stream.) Pure.
std::string dedup_id(const DeadLetterFacts& facts);

// The header block of a dead letter: `original` (a NATS/1.0 block, or empty) with the Jetfan-*
// headers of `facts` added, and dedup_id(facts) first. The Jetfan-* headers and a jetfan
// Nats-Msg-Id that `original` had (a redriven dead letter's) are left out. Pure.
std::string dead_letter_headers(std::string_view original, const DeadLetterFacts& facts);

class PendingPublishes {
 public:
  void sent(std::uint64_t id, TimePoint now) { sent_[id] = now; }
  // False: not pending (answered, or given up on already).
  bool answered(std::uint64_t id) { return sent_.erase(id) != 0; }
  // Those sent before now - timeout, no longer pending.
  std::vector<std::uint64_t> overdue(TimePoint now, Duration timeout);
  // Every one, no longer pending (the connection went: no answer will come).
  std::vector<std::uint64_t> take_all();
  std::size_t size() const { return sent_.size(); }

 private:
  std::unordered_map<std::uint64_t, TimePoint> sent_;
};

}  // namespace jetfan
