#pragma once
// DispatchChecker: DispatchCore's rules (dispatch_core.hpp), checked from outside the core. It keeps
// a model of what the core was told and checks every effect the core makes against the rules, and,
// when asked, the core's state against the model. The core's randomized model test
// (dispatch_core_test.cpp) and the session fuzzer (fuzz/session_fuzz.cpp) both use it, so both
// hold the core to the same rules.
//
// Use: give an input to the core, tell the checker about it (arrived, connected, answered, ...),
// then pass the core's effects to check() before applying them. Every check returns the first rule
// it finds broken, in words, or an empty string when every rule holds.
//
// The rules checked:
//   - MSG: never while draining; only to a connected connection, of a handler that is a recipient,
//     has not confirmed the message in any copy and does not have it in flight already; each
//     delivery id new; never more than the handler's max_inflight in flight on one connection;
//   - +ACK only once every recipient has ACKed (none TERMed); +TERM only once every recipient has
//     settled and one said TERM, or for a message with no key; never both for one sequence. Under
//     AckPolicy all either also settles every sequence below, whose recipients must all have
//     confirmed too. Under AckPolicy none nothing goes to the server (no verb, no +WPI);
//   - -NAK never of a sequence settled at the server, never of one every recipient confirmed
//     unless draining; while draining, with the delay left of the hand-back given to begin_drain;
//     of a message with no key only at the end of a drain under AckPolicy all;
//   - order: a MSG to a handler given an order key for the message (Arrival::order) only while
//     nothing else of that key is in flight to it and no older message of the key it still owes is
//     held by the core (one handed back for room is the model test's to check: its wait has a time);
//   - at most one verb per copy; every copy released once, and named by no effect after that;
//   - a failure is reported only of a delivery in flight, before its message is released;
//   - state: held() counts the copies not released (one is alive for each message held);
//     in_flight() and is_in_flight() agree with the deliveries made and not yet settled, failed or
//     abandoned; nothing is in flight on a connection that is gone;
//   - dead letters: only for a recipient that has not confirmed the message, has it not in flight
//     and has no dead letter of it stored already; for a used-up budget only once the handler
//     failed it max_attempts times (counted from the failures reported); at most one publish of it
//     pending at a time. A dead letter counts as the handler's confirmation only once it is stored,
//     so no +ACK or +TERM goes before that. A give-up without dead letter counts as its TERM;
//   - end: nothing held or in flight, every copy released.
// A confirmation the core accepts (ack, nak, term, wip returning true) must be of a delivery in
// flight on that connection, and one it refuses must not be: no connection settles another's.
//
// Assumes `remember` is more than the messages of a run: the core forgets no confirmation.
// Thread: one owner. Not thread-safe.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "dispatch_core.hpp"

namespace jetfan {

class DispatchChecker {
 public:
  // The settings the core was made with.
  explicit DispatchChecker(const CoreSettings& settings);

  // What the core was told, right after it was.
  void arrived(const Arrival& arrival);
  void connected(ConnectionId connection, std::size_t handler);
  void disconnected(ConnectionId connection);
  enum class Answer { kAck, kNak, kTerm, kWip };
  // A handler's answer on `connection`, and what the core returned for it.
  std::string answered(ConnectionId connection, DeliveryId delivery, Answer answer, bool core_knew);
  void began_drain(TimePoint now, Duration handback_delay);
  void abandoned_all();
  // The answer to a kDeadLetter effect's publish, and what the core returned for it.
  std::string dead_letter_answered(std::uint64_t publish, bool stored, bool core_knew);

  // The core's effects since the last check, at `now` (the time of the input that made them).
  std::string check(std::span<const Effect> effects, TimePoint now);
  std::string check_state(const DispatchCore& core) const;
  std::string check_end(const DispatchCore& core) const;

  // What the model knows, for a driver choosing its next input.
  using FlightKey = std::pair<ConnectionId, DeliveryId>;
  const std::map<FlightKey, std::uint64_t>& in_flight() const { return in_flight_; }  // to its sequence
  std::vector<std::uint64_t> held() const;         // sequences of which a copy is alive in the core
  std::vector<std::uint64_t> handed_back() const;  // nak'd, and not delivered again or settled since
  std::vector<std::uint64_t> settled_at_server() const;
  std::uint64_t failures() const { return failures_; }  // kFailed effects

 private:
  struct Sequence {
    HandlerMask recipients = 0;
    HandlerMask confirmed = 0;  // ACKed or TERMed, in any copy
    HandlerMask termed = 0;
    HandlerMask in_flight = 0;     // handlers it is in flight to
    std::uint64_t deliveries = 0;  // of its latest copy
    bool unroutable = false;
    bool settled = false;  // at the server: by its own +ACK or +TERM, or under AckPolicy all one above
    bool sent_ack = false;
    bool sent_term = false;
    bool handed_back = false;
    MessageHandle live = 0;  // its copy the core holds; 0 for none
  };

  bool all_confirmed(const Sequence& s) const { return (s.confirmed & s.recipients) == s.recipients; }
  std::string check_one(const Effect& effect, TimePoint now);
  std::string settle(std::uint64_t seq);

  CoreSettings settings_;
  bool draining_ = false;
  TimePoint handback_until_{};
  std::map<std::uint64_t, Sequence> sequences_;
  std::unordered_map<MessageHandle, std::uint64_t> sequence_of_;
  std::unordered_set<MessageHandle> answered_, released_, trimmed_;
  std::map<FlightKey, std::uint64_t> in_flight_;
  std::set<DeliveryId> delivery_ids_;
  std::unordered_map<ConnectionId, std::size_t> handler_of_;  // every connection there ever was
  std::set<ConnectionId> connected_, gone_;
  std::unordered_map<ConnectionId, std::size_t> flights_per_connection_;
  std::map<std::uint64_t, std::map<std::size_t, std::string>> order_keys_;  // seq -> handler -> key
  std::string check_order(std::uint64_t seq, std::size_t handler) const;
  std::uint64_t failures_ = 0;
  struct Publish {
    std::uint64_t seq;
    std::size_t handler;
  };
  std::map<std::uint64_t, Publish> publishing_;                            // by publish id
  std::set<std::pair<std::uint64_t, std::size_t>> dead_letters_;           // (seq, handler): pending or stored
  std::set<std::pair<std::uint64_t, std::size_t>> retrying_;               // a publish failed, to be tried again
  std::map<std::pair<std::uint64_t, std::size_t>, std::uint32_t> failed_;  // failures reported
};

}  // namespace jetfan
