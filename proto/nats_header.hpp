#pragma once
// Reads the NATS header block a message may carry ("NATS/1.0[ status]\r\nName: value\r\n...\r\n\r\n"),
// as jetfan receives it from NATS and passes it on in MSG. One reading for the daemon (order_by
// header:NAME) and the C++ client. Pure and allocation-free: every result is a view into the block
// the caller passed, valid as long as those bytes are.
//
// The reading, on any bytes at all (it never fails, and garbage gives what can be read):
//   - lines end at "\n"; a "\r" before it is dropped, so "\r\n" and a bare "\n" both work, and the
//     last line needs no line end;
//   - the first line is the status line ("NATS/1.0", perhaps with a status code) and is skipped;
//   - the first empty line ends the block; nothing after it is read;
//   - a line is "Name: value" split at its first ':'; spaces and tabs around the name and the value
//     are dropped. A line without ':' or with an empty name is skipped.

#include <optional>
#include <string_view>

namespace jetfan::proto {

struct HeaderField {
  std::string_view name;   // as sent, without surrounding blanks
  std::string_view value;  // without surrounding blanks; may be empty
};

// A cursor over the fields of one block, in order; a name sent twice comes twice.
class HeaderFields {
 public:
  explicit HeaderFields(std::string_view block);
  // The next field, or false at the end of the block.
  bool next(HeaderField& out);

 private:
  std::string_view rest_;
};

// The value of the first field named `name`, compared ASCII case-insensitively; nullopt if there is
// none. An empty `name` matches nothing.
std::optional<std::string_view> find_header(std::string_view block, std::string_view name);

}  // namespace jetfan::proto
