#pragma once
// The handler protocol, versions 1 to 3 (PROTOCOL.md): its limits and the frames each side sends.
// Plain values; no I/O.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace jetfan::proto {

// The versions this code speaks: every one from 1 to kLatestVersion. A handler's HELLO names the
// highest it speaks; jetfan answers in READY with the highest both speak (negotiated_version).
inline constexpr std::uint32_t kVersion1 = 1;
inline constexpr std::uint32_t kVersion2 = 2;  // MSG also carries the publish time, subject, server's count
// A NAK may say why ("NAK <id> <delay-ms>|- <reason>"); MSG is version 2's with one more word at the
// end, the delivery's traceparent or "-"; a handler may publish (PUB, answered by PUBOK or PUBERR).
// Version 3 is not yet released: the other wire changes of the next release join it (CHANGELOG.md,
// Unreleased).
inline constexpr std::uint32_t kVersion3 = 3;
inline constexpr std::uint32_t kLatestVersion = kVersion3;
inline constexpr std::size_t kMaxCommandLine = 1024;  // handler -> jetfan, with the line end
// jetfan -> handler, with the line end: room for a version 2 or 3 MSG line, which holds the subject
// about twice (as the key and as the subject), for every subject a NATS server takes with its
// default max_control_line of 4096 bytes: at most 2 * 4096 + 210 bytes in version 3.
inline constexpr std::size_t kMaxDeliveryLine = 16 * 1024;
inline constexpr std::size_t kMaxBody = 64 * 1024 * 1024;  // headers + payload of one MSG or PUB
// The largest protocol version (HELLO, READY) and READY max-unconfirmed a parser accepts.
inline constexpr std::uint64_t kMaxSmallNumber = 1'000'000;

// What a handler sends to jetfan.
enum class Verb { kHello, kAck, kNak, kTerm, kWip, kPing, kPong, kPub };
const char* to_string(Verb verb);

struct Command {
  Verb verb = Verb::kPing;
  std::string handler;                    // HELLO
  std::uint32_t version = 0;              // HELLO
  std::uint64_t id = 0;                   // ACK, NAK, TERM, WIP; PUB: its request id
  std::optional<std::uint64_t> delay_ms;  // NAK
  std::string reason;                     // TERM; NAK from version 3 on
  // PUB (version 3 on): where to, the header block ("NATS/1.0\r\n...\r\n\r\n" or empty) and the
  // payload; for a publish tied to a delivery of the connection, that delivery's id and the
  // handler's index of this publish among that delivery's. `dropped`: the body was larger than the
  // parser was told to keep (CommandParser::set_max_publish_body), and was read and dropped: headers
  // and payload are empty, `body_bytes` says how large it was.
  std::string subject;
  std::string headers;
  std::string payload;
  std::optional<std::uint64_t> tied_to;
  std::uint64_t tie_index = 0;
  std::uint64_t header_bytes = 0;  // the line's <header-bytes>
  std::uint64_t body_bytes = 0;    // the line's <total-bytes>
  bool dropped = false;
};

// What jetfan sends to a handler.
struct Ready {
  std::uint32_t version = 0;
  std::string handler;
  std::uint32_t max_unconfirmed = 0;  // the handler's max_inflight in jetfan's config
  std::vector<std::string> patterns;
};

struct Delivery {
  std::uint64_t id = 0;
  std::string key;
  std::uint64_t stream_seq = 0;
  std::uint64_t deliveries = 0;  // of this message to this handler, this one included (1: the first)
  std::string headers;           // the NATS/1.0 header block as JetStream sent it, or empty
  std::string payload;
  // Version 2 only (0 and empty in version 1):
  std::uint64_t published_ns = 0;       // when JetStream stored it, in nanoseconds since 1970 (UTC); 0: unknown
  std::string subject;                  // the message's full NATS subject
  std::uint64_t server_deliveries = 0;  // how often JetStream has delivered it to jetfan (1 the first time)
  // Version 3 on: the W3C traceparent of jetfan's span of this delivery, the parent of the handler's
  // own spans; empty when jetfan does not trace it ("-" on the wire), and in versions 1 and 2.
  std::string traceparent;
};

// The answer to a PUB (version 3 on): PUBOK when JetStream stored it, PUBERR when it did not.
struct PublishAnswer {
  std::uint64_t id = 0;    // the PUB's request id
  std::string stream;      // PUBOK: the stream that stored it
  std::uint64_t seq = 0;   // PUBOK: its sequence there
  bool duplicate = false;  // PUBOK: already stored under its Nats-Msg-Id (seq is that copy's)
  std::string code;        // PUBERR: why, as to_string(PublishError) spells it (a client keeps codes it does not know)
  std::string reason;      // PUBERR: for people; may be empty
};

// Why jetfan did not store a PUB: PUBERR's codes (PROTOCOL.md, "Publishing"), stable as the error
// codes are.
enum class PublishError {
  kNotAllowed,   // not-allowed: the handler may not publish to that subject (its publish.subjects)
  kBadSubject,   // bad-subject: not a subject one can publish to (empty tokens, wildcards, control bytes)
  kBadHeaders,   // bad-headers: the header block is not "NATS/1.0 ... \r\n\r\n"
  kTooLarge,     // too-large: larger than the server's max_payload
  kNotInFlight,  // not-in-flight: tied to a delivery that is not in flight on this connection
  kBusyId,       // busy-id: the request id is that of an unanswered PUB of this connection
  kNoStream,     // no-stream: no stream captures the subject
  kRefused,      // refused: the stream refused it (its limits, an expectation in a header, ...)
  kTimeout,      // timeout: no answer from the server in time
  kServerDown,   // server-down: no connection to the server
};
const char* to_string(PublishError code);

struct Frame {
  enum class Kind { kReady, kMsg, kErr, kPing, kPong, kPubOk, kPubErr };
  Kind kind = Kind::kPing;
  Ready ready;            // kReady
  Delivery delivery;      // kMsg
  std::string error;      // kErr
  PublishAnswer publish;  // kPubOk, kPubErr
};

// Why a parser rejected a stream. The codes are stable and the same in every client (PROTOCOL.md,
// "Error codes"); proto/vectors/ pairs each with the streams that must produce it. Programs compare
// codes; the message beside a code (the parsers' error()) is for people and may change.
enum class ErrorCode {
  kNone,
  kLineTooLong,         // line-too-long: a control line over its direction's limit
  kEmptyLine,           // empty-line: a blank line from jetfan (handlers may send blank lines)
  kUnknownVerb,         // unknown-verb
  kMissingArgument,     // missing-argument
  kTooManyArguments,    // too-many-arguments
  kBadNumber,           // bad-number: not 1-20 decimal digits, over 2^64-1, or over a field's range
  kHeaderExceedsTotal,  // header-exceeds-total: MSG header bytes > total bytes
  kBodyTooLarge,        // body-too-large: MSG total bytes over kMaxBody
  kBadBodyEnd,          // bad-body-end: a MSG body not followed by "\r\n"
  kBadTraceparent,      // bad-traceparent: a version 3 MSG's traceparent neither "-" nor a W3C traceparent
};
// The code as PROTOCOL.md spells it, e.g. "line-too-long"; "none" for kNone.
const char* to_string(ErrorCode code);

// Helpers shared by the parsers.
// Splits at spaces and tabs into `words`, which is cleared first; its capacity is reused, so a
// parser that keeps one vector allocates nothing per line.
void split_words(std::string_view line, std::vector<std::string_view>& words);
std::optional<std::uint64_t> parse_number(std::string_view word);
bool equals_ignoring_case(std::string_view a, std::string_view b);
// A version 3 MSG's <traceparent>, when it is not "-": a W3C traceparent of exactly 55 characters,
// "<version>-<trace-id>-<parent-id>-<flags>" in lowercase hex (2, 32, 16 and 2 digits), the version
// not "ff", neither id all zeros. jetfan writes version 00.
inline constexpr std::size_t kTraceparentSize = 55;
bool is_traceparent(std::string_view word);
// A PUB's <subject>: a NATS subject one can publish to: 1 to kMaxSubject bytes of tokens separated by
// ".", none empty, none "*" or ">" (wildcards), no byte below 0x21 or 0x7f.
inline constexpr std::size_t kMaxSubject = 4096;
bool is_publish_subject(std::string_view subject);
// A PUB's header block: empty, or "NATS/1.0" (then a status or the line end) and fields, ending with
// "\r\n\r\n".
bool is_header_block(std::string_view headers);
// The version a connection speaks when the handler's HELLO names `asked`, the highest it speaks:
// the highest both speak, or 0 when there is none (`asked` is 0).
std::uint32_t negotiated_version(std::uint32_t asked);

}  // namespace jetfan::proto
