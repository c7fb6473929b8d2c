#pragma once
// SettledRecord: the stream sequences jetfan recently settled at the server, and how (acked or
// terminated). Pure, bounded.
//
// Why: acks are not stored at once by nats-server (2.9.10 and 2.15.1 alike: after a SIGKILL both
// redeliver acked messages in the fault suite's acked-redelivered case). After the server restarts
// it can deliver again a message jetfan already acked. With this record jetfan answers such a copy itself, with
// the verb it used before, and no handler sees the message a second time.
//
// Sequences are kept as ranges. The highest range is kept apart, so that settling in order (the
// common case) extends it and a new message (above everything settled) is told apart from a copy,
// both without a tree search. Past `capacity` sequences (and an eighth more, so that forgetting
// happens in chunks) the lowest are forgotten first; a forgotten one that comes back is delivered
// to its handlers again (at least once, as always).
//
// Thread: one owner. Not thread-safe.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>

namespace jetfan {

class SettledRecord {
 public:
  enum class Verb { kAcked, kTerminated };

  explicit SettledRecord(std::size_t capacity) : capacity_(capacity) {}

  void add(std::uint64_t seq, Verb verb);
  std::optional<Verb> find(std::uint64_t seq) const;
  void clear();
  // How many sequences it covers, and in how many ranges.
  std::size_t size() const { return covered_; }
  std::size_t ranges() const { return lower_.size() + (highest_ ? 1 : 0); }

 private:
  struct Range {
    std::uint64_t first;
    std::uint64_t last;
    Verb verb;
  };
  using Ranges = std::map<std::uint64_t, Range>;  // first sequence -> range; all below highest_
  std::optional<Verb> find_lower(std::uint64_t seq) const;
  void add_lower(std::uint64_t seq, Verb verb);
  void trim();

  std::size_t capacity_;
  std::size_t covered_ = 0;
  std::optional<Range> highest_;
  Ranges lower_;
};

}  // namespace jetfan
