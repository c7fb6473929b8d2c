#pragma once
// ReceivedHeaders: a received message's NATS header block, byte for byte, found in the bytes cnats
// keeps for the message instead of rebuilt from cnats's parse of it (natsMsgHeader_Keys/Values),
// which loses a value's bytes from a NUL on, turns a status line ("NATS/1.0 503 ...") into Status
// and Description fields, orders the fields by its hash table and drops a block without fields.
// Pure: JetStreamReader hands in the bytes and acts on the verdict; nothing here knows cnats.
//
// What this relies on was seen with cnats 3.4.1 (Debian 12) and 3.10.1 (Debian 13) by receiving
// messages published with raw HPUBs, and is checked again at run time (JetStreamReader, below):
//   - A received natsMsg is one allocation: its subject, a NUL, its reply subject, a NUL, the header
//     block as the server sent it, a NUL, the payload (natsMsg_GetData()), a NUL. The bytes from
//     the reply subject's NUL to the payload are therefore the block and one NUL, or none at all
//     when the message has no header block. (This is cnats's layout, not its API: a later cnats may
//     change it.)
//   - cnats parses the block in place, the first time anything asks for a header (every
//     natsMsgHeader_* call): it writes NULs over the CR that ends the first line, over the colon
//     after each name and over the CR (or the first trailing blank) after each value. The block is
//     then no longer the one received. jetfan asks for no header of a message it forwards.
//   - natsSubscription_NextMsg asks every message with an empty payload whether it is a "503 No
//     Responders" status (natsMsg_IsNoResponders), which parses its block: a message with headers
//     and an empty payload comes parsed already. Its block cannot be had; it is rebuilt.
//
// JetStreamReader checks the layout once, on the first block found this way, against cnats's own
// parse of it (agrees_with_parse), and from then on trusts it; a block that does not agree makes it
// rebuild every block from then on, with a warning.

#include <string_view>
#include <vector>

namespace jetfan {

// What the bytes between a message's reply subject and its payload hold.
struct HeaderGap {
  enum class Kind {
    kNone,     // nothing: the message has no header block
    kBlock,    // `block`: the header block as received
    kParsed,   // a header block cnats has parsed in place already (its first line ends in NUL, LF)
    kUnknown,  // not the layout above: no trailing NUL, or no "NATS/1.0" at the start
  };
  Kind kind = Kind::kNone;
  std::string_view block;  // kBlock: the block, without the NUL after it
};

// `gap`: the bytes from just after the reply subject's terminating NUL up to the payload.
HeaderGap read_header_gap(std::string_view gap);

// One field as cnats's parse gives it (natsMsgHeader_Keys, then natsMsgHeader_Values of each).
struct ParsedField {
  std::string_view name;
  std::string_view value;
};

enum class Agreement {
  kAgrees,      // every field of `block` is one of `parsed` and the other way round, in each name's order
  kDisagrees,   // they differ: the block is not where the layout says
  kCannotTell,  // the block has what the two read differently (a folded or empty value, a line
                // without a colon, a NUL in a name, a Status field beside a status line): ask again
                // with another block
};
// Compares a block found in the gap with cnats's parse of the same message: names exactly, values
// as cnats keeps them (a C string: up to a NUL; without blanks around). A status line's Status and
// Description fields of `parsed` are left out. Pure.
Agreement agrees_with_parse(std::string_view block, const std::vector<ParsedField>& parsed);

}  // namespace jetfan
