#pragma once
// Effect: one thing DispatchCore decided, for its caller to carry out (ARCHITECTURE.md, "The core's
// effects"): a MSG to a connection, a verb to the server on the message's reply subject, the
// message's bytes freed or trimmed, a dead letter to publish, a fact to report. The core appends
// them to its list in the order they must be carried out. Its own header, so that the parts of the
// core that decide effects themselves (AckFloor) append them to that list directly.
//
// Plain values; no ownership. Thread: whatever the list's owner's is.

#include <cstdint>

#include "retry_budget.hpp"
#include "time.hpp"

namespace jetfan {

using MessageHandle = std::uint64_t;  // the caller's name for one received copy of a message
using ConnectionId = std::uint64_t;
using DeliveryId = std::uint64_t;  // names one delivery on one connection; the protocol's <id>

struct Effect {
  enum class Kind {
    kDeliver,         // send message to connection as delivery
    kAck,             // +ACK message at the server
    kNak,             // -NAK message at the server, redeliver after delay
    kTerm,            // +TERM message at the server
    kWip,             // +WPI message at the server
    kRelease,         // the core no longer refers to message; its bytes may go
    kFailed,          // a fact, to report: delivery of message on connection failed for cause
    kDeadLetter,      // publish message as a dead letter of handler, as publish; answer with dead_letter_*()
    kGaveUp,          // a fact, to report: handler used up its max_attempts, no dead letter: a TERM for it
    kRedriveSettled,  // redrive `redrive` is settled by handler (ACK, or dead-lettered again): delete the old one
    kRedriveDropped,  // redrive `redrive` is over unsettled (drain, reload): keep the dead letter
    kTrim,            // only the reply subject of message is needed from now on (settled, waiting for the floor)
    kOrderReleased,   // a fact, to report: message, which waited behind an older one of its order key for
                      // handler, may go to it now (R21); for tracing. Only for a message that waited.
  };
  Kind kind;
  MessageHandle message = 0;
  ConnectionId connection = 0;        // kDeliver, kFailed
  DeliveryId delivery = 0;            // kDeliver, kFailed
  Duration delay{0};                  // kNak; kFailed by a NAK: the handler's own delay, negative when it gave none
  FailCause cause = FailCause::kNak;  // kFailed
  std::size_t handler = 0;            // kDeadLetter, kGaveUp, kOrderReleased
  std::uint64_t publish = 0;          // kDeadLetter: names this try of the publish
  GiveUpReason reason{};              // kDeadLetter, kGaveUp
  std::uint64_t redrive = 0;          // kRedriveSettled, kRedriveDropped: Redrive::id
  bool again = false;                 // kRedriveSettled: not ACKed; its new dead letter is stored
  std::uint64_t deliveries = 0;       // kDeliver: the deliveries of message to its handler, this one
                                      // included (RetryBudget::deliveries_to)
};

}  // namespace jetfan
