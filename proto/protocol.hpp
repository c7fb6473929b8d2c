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
// end, the delivery's traceparent or "-". Version 3 is not yet released: the other wire changes of
// the next release join it (CHANGELOG.md, Unreleased).
inline constexpr std::uint32_t kVersion3 = 3;
inline constexpr std::uint32_t kLatestVersion = kVersion3;
inline constexpr std::size_t kMaxCommandLine = 1024;  // handler -> jetfan, with the line end
// jetfan -> handler, with the line end: room for a version 2 or 3 MSG line, which holds the subject
// about twice (as the key and as the subject), for every subject a NATS server takes with its
// default max_control_line of 4096 bytes: at most 2 * 4096 + 210 bytes in version 3.
inline constexpr std::size_t kMaxDeliveryLine = 16 * 1024;
inline constexpr std::size_t kMaxBody = 64 * 1024 * 1024;  // headers + payload of one MSG
// The largest protocol version (HELLO, READY) and READY max-unconfirmed a parser accepts.
inline constexpr std::uint64_t kMaxSmallNumber = 1'000'000;

// What a handler sends to jetfan.
enum class Verb { kHello, kAck, kNak, kTerm, kWip, kPing, kPong };
const char* to_string(Verb verb);

struct Command {
  Verb verb = Verb::kPing;
  std::string handler;                    // HELLO
  std::uint32_t version = 0;              // HELLO
  std::uint64_t id = 0;                   // ACK, NAK, TERM, WIP
  std::optional<std::uint64_t> delay_ms;  // NAK
  std::string reason;                     // TERM; NAK from version 3 on
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

struct Frame {
  enum class Kind { kReady, kMsg, kErr, kPing, kPong };
  Kind kind = Kind::kPing;
  Ready ready;        // kReady
  Delivery delivery;  // kMsg
  std::string error;  // kErr
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
// The version a connection speaks when the handler's HELLO names `asked`, the highest it speaks:
// the highest both speak, or 0 when there is none (`asked` is 0).
std::uint32_t negotiated_version(std::uint32_t asked);

}  // namespace jetfan::proto
