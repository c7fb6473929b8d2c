#pragma once
// DispatchChecker: DispatchCore's rules (docs/dispatch-rules.md), checked from outside the core. It keeps
// a model of what the core was told and checks every effect the core makes against the rules, and,
// when asked, the core's state against the model. The core's randomized model test
// (dispatch_core_test.cpp) and the session fuzzer (fuzz/session_fuzz.cpp) both use it, so both
// hold the core to the same rules.
//
// Use: give an input to the core, tell the checker about it (arrived, connected, answered, ...),
// then pass the core's effects to check() before applying them. Every check returns the first rule
// it finds broken, in words, or an empty string when every rule holds.
//
// The rules checked are those marked "checked" in docs/dispatch-rules.md (R1, R2, R4-R6, R8-R11,
// R14, R15, R17, R18, R20, R21, R41, R44, R45) and its invariants I1-I4; every message a check
// returns begins with the number of the rule it found broken ("R4: +ACK before every recipient
// ACKed (sequence 17)"). One handed back for room is the model test's to check for order (R23: its
// wait has a time).
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
  // The core stood by (R46: held to R44 and R45, with `handback_delay`) or resumed.
  void stood_by(TimePoint now, bool standing, Duration handback_delay = Duration(0));
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
  bool draining_ = false;     // draining, or standing by
  bool drain_began_ = false;  // draining for good
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
