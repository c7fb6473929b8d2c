#pragma once
// Reads the NATS header block a MSG body starts with ("NATS/1.0\r\nName: value\r\n...\r\n"), as
// jetfan passes it on unchanged. Pure; no state.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace jetfan {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

// Every "Name: value" line in order, names as sent, values without surrounding blanks; a name that
// appears more than once appears once per value. The status line and lines without a colon are
// skipped and the first blank line ends the block (proto::HeaderFields), so a malformed block
// gives what can be read and never fails. Empty input: no headers.
HeaderList parse_headers(std::string_view block);

// The first value of `name`, or nullptr. Names match case-insensitively, as in jetfan's other
// clients (TypeScript, Python).
const std::string* find_header(const HeaderList& headers, std::string_view name);

}  // namespace jetfan
