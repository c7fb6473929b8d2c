#pragma once
// UnreadableMessages: a message whose subject the NATS client cannot read (a bare CR, say) breaks
// jetfan's connection at each delivery, and cnats names neither it nor the cause
// (core/unreadable_subject.hpp says how). This type finds it and ends the loop:
//   - it hears what the dispatcher hears (deliveries read, the connection going and coming back,
//     each consumer info answer) and runs core/UnreadableSearch on it;
//   - it reads the search's candidates from the stream with MSG.GET through the Upstream (its
//     JSON answer carries any subject), one at a time, with ids of its own (kIdBit);
//   - once found, every delivery the break took with it that jetfan does not hold is handed back at
//     once (-NAK on an ack subject made by hand, core/unreadable_subject.hpp's ack_subject), so that
//     it comes again now rather than after AckWait; the message is logged by stream sequence and
//     escaped subject, counted, and kept for `jetfan status`;
//   - no handler can be given it (its subject cannot be written in a MSG line either). Each handler
//     whose patterns match its key and that has a dead_letter subject gets it as a dead letter (the
//     message from MSG.GET, its headers and payload as stored; Jetfan-Subject holds the subject
//     escaped, Jetfan-Reason says why); once every one is stored, the host settles it as a message
//     no handler can be given (the core's unroutable arrival: +TERM on its ack subject made by
//     hand, with AckPolicy all once the floor reaches it). A dead letter that is not stored leaves
//     it unsettled: the server delivers it again after AckWait, the connection breaks once more and
//     it is found and dead-lettered again (the dead letter's Nats-Msg-Id keeps it one).
// A TERM does not delete it from a stream with limits retention: its sequence in the log and status
// is where an operator reads it (docs/OPERATING.md). With work-queue or interest retention the TERM
// removes it: the dead letter is then its only copy, so a handler that must not lose such a message
// needs a dead_letter subject.
//
// Thread: the io_context thread only. `config`, `upstream`, `arena` and `host` must outlive it.

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "config.hpp"
#include "consumer_info.hpp"
#include "message_bytes.hpp"
#include "status_snapshot.hpp"
#include "stream_message.hpp"
#include "time.hpp"
#include "unreadable_subject.hpp"
#include "upstream.hpp"

namespace jetfan {

// What UnreadableMessages needs of the running jetfan (the dispatcher).
class UnreadableHost {
 public:
  // Settles the message on the server as one no handler can be given (DispatchCore's unroutable
  // arrival): `bytes`' reply subject is the ack subject made by hand.
  virtual void settle_unreadable(MessageBytesPtr bytes, std::uint64_t stream_seq) = 0;
  // The stream sequences of the messages jetfan holds now (their deliveries were not lost).
  virtual std::unordered_set<std::uint64_t> held_sequences() const = 0;
  // The handlers (indexes of the config's) whose patterns match `key`.
  virtual std::vector<std::size_t> matching_handlers(std::string_view key, std::string_view headers) = 0;

 protected:
  ~UnreadableHost() = default;
};

class UnreadableMessages {
 public:
  // Requests of this type have this bit set in their id (ConsumerWatch's bit never is).
  static constexpr std::uint64_t kIdBit = std::uint64_t{1} << 61;
  // A read unanswered this long fails the search (JetStream answers in milliseconds).
  static constexpr Duration kReadTimeout{5000};
  // Deliveries handed back (-NAK) per culprit, at most; the rest come after AckWait.
  static constexpr std::size_t kMaxHandBacks = 4096;
  // Culprits kept for status, the newest.
  static constexpr std::size_t kKept = 16;

  UnreadableMessages(const Config& config, Upstream& upstream, MessageBytesArena& arena, UnreadableHost& host);

  static bool owns(std::uint64_t id) { return (id & kIdBit) != 0 && (id & (kIdBit << 1)) == 0; }

  void bound(std::uint64_t delivered_consumer_seq, std::uint64_t delivered_stream_seq) {
    search_.bound(delivered_consumer_seq, delivered_stream_seq);
  }
  void arrived(std::uint64_t stream_seq, std::uint64_t consumer_seq) { search_.arrived(stream_seq, consumer_seq); }
  // The connection went; only a protocol error (kProtocolError) can be a message's doing.
  void disconnected(bool protocol_error) {
    if (protocol_error) search_.disconnected();
  }
  // Answers to dead letters sent before are lost with the connection: those count as failed.
  void reconnected();
  // True while a break waits for a consumer info answer: ask for one now.
  bool wants_consumer_info() const { return search_.break_open(); }
  void heard(const jetstream::ConsumerInfo& info, TimePoint now);
  // The answer to one of its reads (owns(id)).
  void on_api_reply(std::uint64_t id, const ApiReply& reply, TimePoint now);
  // The answer to one of its dead letters (owns(id)).
  void on_published(std::uint64_t id, const PublishResult& result);
  void time_out(TimePoint now);

  // `jetfan unreadable --seq N` (daemon/CONTROL.md): an operator's look at stream seq N, for a
  // message the search did not reach. When its subject is one the client cannot read, it is handled
  // as one found (dead letters, then +TERM on its ack subject made with consumer sequence 0, which
  // the server does not read for AckPolicy explicit); `done` gets "OK ..." or "ERR ..." once.
  // A refusal (one under way already) is returned in words, and `done` is never called.
  using Done = std::function<void(bool ok, const std::string& line)>;
  std::optional<std::string> examine(std::uint64_t seq, Done done, TimePoint now);
  // `jetfan unreadable`: one line per message found since start (the newest kKept).
  std::vector<std::string> list() const;

  void fill(StatusSnapshot& snapshot) const;
  std::uint64_t found_total() const { return found_total_; }

 private:
  struct Culprit {
    UnreadableFound found;
    jetstream::StoredMessage message;
    std::map<std::uint64_t, std::size_t> publishing;  // dead letters unanswered: id -> handler
    std::vector<std::string> stored_for, failed_for;
    TimePoint since{};
  };
  void read_next(TimePoint now);
  void contain(const UnreadableFound& found, jetstream::StoredMessage message, TimePoint now);
  // Every dead letter answered: settle it, or leave it for its next delivery.
  void conclude(Culprit& culprit);
  void record(std::uint64_t stream_seq, const std::string& outcome);

  const Config& config_;
  Upstream& upstream_;
  MessageBytesArena& arena_;
  UnreadableHost& host_;
  UnreadableSearch search_;
  std::string filter_;  // the consumer's filter subject; ">" for none
  std::uint64_t next_id_ = 1;
  std::optional<std::uint64_t> awaiting_;  // the read under way (id without kIdBit)
  std::uint64_t awaiting_seq_ = 0;
  TimePoint asked_{};
  std::uint64_t found_total_ = 0;
  std::deque<StatusSnapshot::Unreadable> kept_;
  std::map<std::uint64_t, Culprit> culprits_;  // by stream sequence: waiting for dead letters
  struct Examined {
    std::uint64_t id = 0;
    std::uint64_t seq = 0;
    Done done;
    TimePoint asked{};
  };
  std::optional<Examined> examined_;
  void examined(jetstream::StoredMessage message, TimePoint now);
  void end_examine(bool ok, const std::string& line);
};

}  // namespace jetfan
