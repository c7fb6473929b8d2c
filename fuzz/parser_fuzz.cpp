// libFuzzer target for both parsers and the NATS header lookup. Differential: the same bytes fed
// whole and fed in two pieces (cut where the first byte says) must give the same frames and the same
// verdict; the command parser reads them in version 1 or the latest version, as the first byte's top
// bit says. The bytes, read as a header block, must give fields that lie inside them, and find_header
// must agree with the first field of each name.
// Build with -DJETFAN_FUZZ=ON (clang); run with scripts/fuzz.sh.

#include <cstdint>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

#include "command_parser.hpp"
#include "delivery_parser.hpp"
#include "nats_header.hpp"

namespace {

using namespace jetfan::proto;

template <typename Parser, typename Out, typename Result>
std::pair<std::vector<std::string>, bool> run(const std::string& bytes, std::size_t cut, Result complete,
                                              std::string (*show)(const Out&), std::uint32_t version) {
  Parser parser;
  if constexpr (std::is_same_v<Parser, CommandParser>) parser.set_version(version);
  std::vector<std::string> seen;
  for (const std::string& piece : {bytes.substr(0, cut), bytes.substr(cut)}) {
    std::string chunk = piece;
    std::string_view input(chunk);
    Out out;
    for (;;) {
      const auto result = parser.parse(input, out);
      if (result == complete) {
        seen.push_back(show(out));
        continue;
      }
      if (result == Result::kError) return {seen, false};
      break;
    }
  }
  return {seen, true};
}

std::string show_command(const Command& c) {
  return std::string(to_string(c.verb)) + "|" + c.handler + "|" + std::to_string(c.version) + "|" +
         std::to_string(c.id) + "|" + (c.delay_ms ? std::to_string(*c.delay_ms) : "-") + "|" + c.reason;
}

std::string show_frame(const Frame& f) {
  std::string s = std::to_string(static_cast<int>(f.kind)) + "|" + f.error + "|" + f.ready.handler + "|" +
                  f.delivery.key + "|" + std::to_string(f.delivery.id) + "|" + f.delivery.headers + "|" +
                  f.delivery.payload;
  for (const auto& p : f.ready.patterns) s += "|" + p;
  return s;
}

bool inside(std::string_view part, std::string_view whole) {
  return part.empty() || (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}

void check_headers(std::string_view block) {
  HeaderFields fields(block);
  HeaderField field;
  std::size_t count = 0;
  while (fields.next(field)) {
    if (field.name.empty() || !inside(field.name, block) || !inside(field.value, block)) std::abort();
    const auto found = find_header(block, field.name);
    if (!found) std::abort();
    // The first field of this name: the same one, or an earlier one.
    if (found->data() > field.value.data()) std::abort();
    if (++count > block.size()) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::size_t cut = bytes.empty() ? 0 : data[0] % (bytes.size() + 1);
  const std::uint32_t version = (data[0] & 0x80) != 0 ? kLatestVersion : kVersion1;
  const auto commands_whole =
      run<CommandParser, Command>(bytes, bytes.size(), CommandParser::Result::kCommand, show_command, version);
  const auto commands_split =
      run<CommandParser, Command>(bytes, cut, CommandParser::Result::kCommand, show_command, version);
  if (commands_whole != commands_split) std::abort();
  const auto frames_whole =
      run<DeliveryParser, Frame>(bytes, bytes.size(), DeliveryParser::Result::kFrame, show_frame, version);
  const auto frames_split = run<DeliveryParser, Frame>(bytes, cut, DeliveryParser::Result::kFrame, show_frame, version);
  if (frames_whole != frames_split) std::abort();
  check_headers(bytes);
  return 0;
}
