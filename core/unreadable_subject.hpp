#pragma once
// A message whose subject the NATS client cannot read, and the search for it after it broke the
// connection. Pure: no I/O, no clock.
//
// Why: nats-server (2.9.10, 2.10.27 and 2.15.1 alike) stores a message published with a raw `PUB`
// whose subject holds a bare CR, and delivers it as `MSG <subject> <sid> <reply> <size>` with the CR
// in the subject. cnats 3.4.1 splits a MSG line's arguments at CR, LF, space and tab, finds five
// arguments where it allows four, and drops the connection as a protocol error, with it whatever
// else that read of the socket brought. It reports no error (natsConnection_GetLastError says
// NATS_OK), it never hands the message over, and the server delivers it again after every AckWait,
// breaking the connection each time. Nothing jetfan receives names it.
//
// UnreadableSearch finds it from the side. The consumer numbers its deliveries (consumer sequence),
// and the server writes them to jetfan's one connection in that order, so the culprit is the
// delivery after the last one jetfan read before the connection broke. When a consumer info answer
// after the break shows the server delivered more than jetfan read, the search reads the stream's
// messages (MSG.GET, whose JSON answer carries any subject) that may be that delivery: first those
// after the last one read, up to the consumer's last delivered, then those above the ack floor
// (a redelivery), at most kMaxReads, one at a time; the first whose subject is not readable is the
// culprit. Its verdict also says what the break took with it: the deliveries above the ack floor
// that jetfan does not hold, which the server would otherwise redeliver only after AckWait.
//
// Thread: one owner.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace jetfan {

// Whether cnats can read a MSG on `subject`: false when it is empty or holds a byte at which cnats
// splits a MSG line (CR, LF, space, tab) or a NUL (the end of a C string).
bool readable_subject(std::string_view subject);

// `subject` for a log line or status: printable ASCII as it is, a backslash as "\\", CR as "\r",
// LF as "\n", tab as "\t", every other byte as "\xNN".
std::string escape_subject(std::string_view subject);

// The $JS.ACK reply subject the server gave the delivery, made by hand:
//   $JS.ACK.<stream>.<consumer>.<deliveries>.<stream seq>.<consumer seq>.<published ns>.<pending>
// nats-server 2.9.10, 2.10.27 and 2.15.1 find the delivery by <stream seq> (+ACK, +TERM, -NAK,
// +WPI); a -NAK is taken only with a <consumer seq> above the ack floor's and at most the last
// delivered; with AckPolicy all, +ACK and +TERM settle every delivery up to <consumer seq>.
// <deliveries>, <published ns> and <pending> are not read for these.
std::string ack_subject(std::string_view stream, std::string_view consumer, std::uint64_t deliveries,
                        std::uint64_t stream_seq, std::uint64_t consumer_seq);

// The search's verdict: the message that broke the connection, and what the break took with it.
struct UnreadableFound {
  std::uint64_t stream_seq = 0;
  std::string subject;  // as stored
  // Its delivery's number: the one after the last delivery jetfan read before the break (an ack
  // subject with it settles exactly up to it with AckPolicy all).
  std::uint64_t consumer_seq = 0;
  // Deliveries the break may have taken with it: the stream sequences in (lost_after, lost_to],
  // but this one and those jetfan holds. The server has them out to jetfan until AckWait.
  std::uint64_t lost_after = 0;
  std::uint64_t lost_to = 0;
  // A consumer sequence the server takes in a -NAK for those: its last delivery's, when heard.
  std::uint64_t nak_consumer_seq = 0;
  bool again = false;  // found before: a break again before what was done about it took effect
};

class UnreadableSearch {
 public:
  // Reads per break, at most: the messages between the ack floor and the last delivery, nearest
  // the break first. A culprit further away is found at a later break, when it is nearer.
  static constexpr std::size_t kMaxReads = 64;
  // Consumer info answers after a reconnect that show nothing lost before the break is let be.
  static constexpr int kQuietAnswers = 3;

  // What the consumer had delivered when jetfan bound it: the deliveries before are not jetfan's.
  void bound(std::uint64_t delivered_consumer_seq, std::uint64_t delivered_stream_seq);
  // A delivery jetfan read (its numbers, from its ack subject). When the first one after a break
  // follows the last one before it, nothing was lost: no search.
  void arrived(std::uint64_t stream_seq, std::uint64_t consumer_seq);
  // The connection went (the client does not tell a broken MSG from other causes); a search is due
  // once the consumer's info shows more delivered than jetfan read. A search under way goes on.
  void disconnected();
  void reconnected() { connected_ = true; }

  struct Server {
    std::uint64_t delivered_consumer_seq = 0;
    std::uint64_t delivered_stream_seq = 0;
    std::uint64_t ack_floor_stream_seq = 0;
  };
  // A consumer info answer. Starts the search when a break is open and the server delivered past
  // what jetfan read before it.
  void heard(const Server& server);

  // The stream sequence to read next (the first message at or after it that the consumer's filter
  // takes), if any; one at a time: nothing more until read() or read_failed().
  std::optional<std::uint64_t> next_read();
  // What the read found: the message at sequence `seq` (at or after the one asked) with `subject`,
  // or nullopt when there is none at or after it. The verdict once found; the search ends then.
  std::optional<UnreadableFound> read(std::uint64_t seq, std::optional<std::string_view> subject);
  // The read could not be made or was not answered: the search ends (a later break starts one).
  void read_failed();

  bool searching() const { return search_.has_value(); }
  bool break_open() const { return broken_.has_value(); }
  std::uint64_t breaks() const { return breaks_; }
  // Searches that ended without a culprit (none in reach, or a read failed).
  std::uint64_t not_found() const { return not_found_; }

 private:
  struct Break {
    std::uint64_t last_consumer_seq = 0;  // the last delivery jetfan read before it
    std::uint64_t last_stream_seq = 0;
    std::optional<std::uint64_t> first_after;  // the first delivery jetfan read after it
    int quiet = 0;                             // answers since the reconnect that showed nothing lost
  };
  struct Search {
    Break at;
    Server server;
    std::uint64_t next = 0;       // the next sequence to read in the current range
    std::uint64_t range_end = 0;  // the current range's last sequence
    bool second_range = false;    // reading (floor, last read] now
    std::size_t reads = 0;
    bool asked = false;
  };
  void end_search(bool found);
  // Moves `next` to the next range when the current one is read; false when none is left.
  bool advance();

  std::uint64_t last_consumer_seq_ = 0;
  std::uint64_t last_stream_seq_ = 0;
  bool connected_ = true;
  std::optional<Break> broken_;
  std::optional<Search> search_;
  std::optional<std::uint64_t> found_seq_;  // the last culprit found
  std::uint64_t breaks_ = 0;
  std::uint64_t not_found_ = 0;
};

}  // namespace jetfan
