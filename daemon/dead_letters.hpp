#pragma once
// DeadLetters: what the dispatcher publishes when a handler gives a message up (the core's
// Effect::Kind::kDeadLetter), and the publishes still waiting for JetStream's acknowledgement.
//
// A dead letter is the message as it came: its payload byte for byte, and its header block byte
// for byte in one header of jetfan's own (Jetfan-Headers below). cnats, through which jetfan
// publishes, takes headers only as name and value C strings and writes them in the order of its
// hash table (natsMsgHeader_Add; 3.4.1 has no call that publishes a block as it is), so the block
// itself cannot be the original's. It holds:
//   Nats-Msg-Id        jetfan's own, first of that name (dedup_id below): a publish tried again
//                      after its answer was lost, or by the next jetfan after a crash, is then
//                      stored once within the stream's duplicate window. The message's own
//                      Nats-Msg-Id stays, after it (the server reads the first); so two handlers'
//                      dead letters of one message are two, never one taken for the other's duplicate
//   the message's own fields, name for name and value for value, for people and for tools that
//                      look at headers (a Jetfan-* field it had is left out; as cnats writes them: a
//                      value ends at a NUL byte, and the status line of "NATS/1.0 503 ..." is not a
//                      field)
//   Jetfan-Handler     the handler that gave it up
//   Jetfan-Reason      "TERM", or "max_attempts 5 used up; last: ack_timeout"
//   Jetfan-Attempts    the deliveries to that handler that failed
//   Jetfan-Subject     the subject it was published on
//   Jetfan-Stream      the stream, Jetfan-Sequence its sequence there, Jetfan-Consumer the durable
//   Jetfan-Deliveries  how often the server had delivered it
//   Jetfan-Time        when the stream stored it (RFC 3339, UTC), if the server said
//   Jetfan-Headers     the message's header block exactly as jetfan received it from JetStream
//                      (status line, order, NUL bytes, a block without fields), in base64 (RFC 4648,
//                      padded); absent when the message had no header block
// The names are in docs/OPERATING.md ("Dead letters").
//
// A redrive gives the handler the original block again, with the dead letter's Jetfan-* fields
// before its blank line (redriven_headers), and a redrive given up again is dead-lettered with the
// same Jetfan-Headers.
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

// The header block of a dead letter, to publish field by field: dedup_id(facts) first, the fields of
// `original` (a NATS/1.0 block, or empty) but its Jetfan-* ones and a jetfan Nats-Msg-Id (a redriven
// dead letter's), the Jetfan-* fields of `facts`, and Jetfan-Headers: `original` in base64, or, for
// a redrive (facts.redriven_from), the last Jetfan-Headers field of `original` as it is. Pure.
std::string dead_letter_headers(std::string_view original, const DeadLetterFacts& facts);

// The header block a redrive of the dead letter whose block is `letter` gives its handler: the
// message's own block (its Jetfan-Headers, decoded) with the dead letter's Jetfan-* fields, each
// line as it is, inserted before its final blank line. A dead letter without a Jetfan-Headers that
// decodes to a block ending in a blank line (the message had no header block) gives `letter`. Pure.
std::string redriven_headers(std::string_view letter);

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
