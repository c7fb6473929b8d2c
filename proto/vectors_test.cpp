// Checks the C++ codec against the conformance vectors in proto/vectors/ (the file format is in
// proto/vectors/README.md). Every client's tests read the same files, so all stay byte-compatible.
// Each stream is parsed whole, cut in two at every byte boundary, and fed one byte at a time; every
// way must give the same frames and, for a bad stream, the same error code.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <type_traits>

#include "command_parser.hpp"
#include "delivery_parser.hpp"
#include "encoder.hpp"

using namespace jetfan::proto;
using json = nlohmann::json;

namespace {

// All vector files of one kind, read from JETFAN_VECTORS_DIR.
std::vector<json> files_of_kind(const std::string& kind) {
  std::vector<json> out;
  for (const auto& entry : std::filesystem::directory_iterator(JETFAN_VECTORS_DIR)) {
    if (entry.path().extension() != ".json") continue;
    std::ifstream in(entry.path());
    json file = json::parse(in);
    REQUIRE(file.at("format") == "jetfan-protocol-vectors 1");
    if (file.at("kind") == kind) out.push_back(std::move(file));
  }
  REQUIRE(!out.empty());
  return out;
}

// JSON strings arrive as UTF-8; in the vectors each character U+0000..U+00FF stands for one byte.
std::string latin1(const std::string& utf8) {
  std::string out;
  for (std::size_t i = 0; i < utf8.size(); ++i) {
    const auto c = static_cast<unsigned char>(utf8[i]);
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else {
      REQUIRE(((c & 0xE0) == 0xC0 && i + 1 < utf8.size()));  // U+0080..U+07FF: two bytes
      const unsigned code = ((c & 0x1Fu) << 6) | (static_cast<unsigned char>(utf8[++i]) & 0x3Fu);
      REQUIRE(code <= 0xFF);
      out.push_back(static_cast<char>(code));
    }
  }
  return out;
}

// A byte string: a string, or an array of strings and {"repeat": s, "count": n} pieces.
std::string bytes_of(const json& value) {
  if (value.is_string()) return latin1(value.get<std::string>());
  std::string out;
  for (const auto& piece : value) {
    if (piece.is_string()) {
      out += latin1(piece.get<std::string>());
    } else {
      const std::string unit = latin1(piece.at("repeat").get<std::string>());
      for (int i = 0; i < piece.at("count").get<int>(); ++i) out += unit;
    }
  }
  return out;
}

std::uint64_t u64(const json& value) {
  const auto number = parse_number(value.get<std::string>());
  REQUIRE(number);
  return *number;
}

Frame frame_from(const json& f) {
  Frame out;
  const std::string type = f.at("type");
  if (type == "READY") {
    out.kind = Frame::Kind::kReady;
    out.ready.version = f.at("version");
    out.ready.handler = bytes_of(f.at("handler"));
    out.ready.max_unconfirmed = f.at("max_unconfirmed");
    for (const auto& p : f.at("patterns")) out.ready.patterns.push_back(bytes_of(p));
  } else if (type == "MSG") {
    out.kind = Frame::Kind::kMsg;
    auto& d = out.delivery;
    d.id = u64(f.at("id"));
    d.key = bytes_of(f.at("key"));
    d.stream_seq = u64(f.at("seq"));
    d.deliveries = u64(f.at("deliveries"));
    d.headers = bytes_of(f.at("headers"));
    d.payload = bytes_of(f.at("payload"));
    // Version 2 fields; a version 1 MSG has neither.
    if (f.contains("published")) d.published_ns = u64(f.at("published"));
    if (f.contains("subject")) d.subject = bytes_of(f.at("subject"));
    if (f.contains("server_deliveries")) d.server_deliveries = u64(f.at("server_deliveries"));
    // Version 3's; null (or absent, as in versions 1 and 2) for none, which the wire writes "-".
    if (f.contains("traceparent") && !f.at("traceparent").is_null()) d.traceparent = bytes_of(f.at("traceparent"));
  } else if (type == "ERR") {
    out.kind = Frame::Kind::kErr;
    out.error = bytes_of(f.at("reason"));
  } else if (type == "PING" || type == "PONG") {
    out.kind = type == "PING" ? Frame::Kind::kPing : Frame::Kind::kPong;
  } else if (type == "PUBOK") {
    out.kind = Frame::Kind::kPubOk;
    out.publish.id = u64(f.at("id"));
    out.publish.stream = bytes_of(f.at("stream"));
    out.publish.seq = u64(f.at("seq"));
    out.publish.duplicate = f.at("duplicate").get<bool>();
  } else if (type == "PUBERR") {
    out.kind = Frame::Kind::kPubErr;
    out.publish.id = u64(f.at("id"));
    out.publish.code = bytes_of(f.at("code"));
    out.publish.reason = bytes_of(f.at("reason"));
  } else {
    FAIL("unknown frame type in a vector: " << type);
  }
  return out;
}

Command command_from(const json& c) {
  Command out;
  const std::string type = c.at("type");
  const std::pair<const char*, Verb> verbs[] = {{"HELLO", Verb::kHello}, {"ACK", Verb::kAck}, {"NAK", Verb::kNak},
                                                {"TERM", Verb::kTerm},   {"WIP", Verb::kWip}, {"PING", Verb::kPing},
                                                {"PONG", Verb::kPong},   {"PUB", Verb::kPub}};
  bool known = false;
  for (const auto& [name, verb] : verbs) {
    if (type == name) {
      out.verb = verb;
      known = true;
    }
  }
  REQUIRE(known);
  if (out.verb == Verb::kHello) {
    out.handler = bytes_of(c.at("handler"));
    out.version = c.at("version");
  }
  if (c.contains("id")) out.id = u64(c.at("id"));
  if (c.contains("delay_ms") && !c.at("delay_ms").is_null()) out.delay_ms = u64(c.at("delay_ms"));
  if (c.contains("reason")) out.reason = bytes_of(c.at("reason"));
  if (out.verb == Verb::kPub) {
    out.subject = bytes_of(c.at("subject"));
    out.headers = bytes_of(c.at("headers"));
    out.payload = bytes_of(c.at("payload"));
    if (!c.at("tied_to").is_null()) {
      out.tied_to = u64(c.at("tied_to"));
      out.tie_index = u64(c.at("index"));
    }
  }
  return out;
}

// Printable and comparable: bytes outside printable ASCII are shown as \xHH.
std::string show(std::string_view bytes) {
  std::string out = "\"";
  for (unsigned char c : bytes) {
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  return out + "\"";
}

std::string show(const Frame& f) {
  std::ostringstream s;
  switch (f.kind) {
    case Frame::Kind::kReady:
      s << "READY " << f.ready.version << ' ' << show(f.ready.handler) << ' ' << f.ready.max_unconfirmed;
      for (const auto& p : f.ready.patterns) s << ' ' << show(p);
      break;
    case Frame::Kind::kMsg: {
      const auto& d = f.delivery;
      s << "MSG " << d.id << ' ' << show(d.key) << ' ' << d.stream_seq << ' ' << d.deliveries << ' ' << show(d.headers)
        << ' ' << show(d.payload) << ' ' << d.published_ns << ' ' << show(d.subject) << ' ' << d.server_deliveries
        << ' ' << show(d.traceparent);
      break;
    }
    case Frame::Kind::kErr:
      s << "ERR " << show(f.error);
      break;
    case Frame::Kind::kPing:
      s << "PING";
      break;
    case Frame::Kind::kPong:
      s << "PONG";
      break;
    case Frame::Kind::kPubOk:
      s << "PUBOK " << f.publish.id << ' ' << show(f.publish.stream) << ' ' << f.publish.seq << ' '
        << f.publish.duplicate;
      break;
    case Frame::Kind::kPubErr:
      s << "PUBERR " << f.publish.id << ' ' << show(f.publish.code) << ' ' << show(f.publish.reason);
      break;
  }
  return s.str();
}

std::string show(const Command& c) {
  std::ostringstream s;
  s << to_string(c.verb);
  switch (c.verb) {
    case Verb::kHello:
      s << ' ' << show(c.handler) << ' ' << c.version;
      break;
    case Verb::kAck:
    case Verb::kWip:
      s << ' ' << c.id;
      break;
    case Verb::kNak:
      s << ' ' << c.id << ' ' << (c.delay_ms ? std::to_string(*c.delay_ms) : "-") << ' ' << show(c.reason);
      break;
    case Verb::kTerm:
      s << ' ' << c.id << ' ' << show(c.reason);
      break;
    case Verb::kPing:
    case Verb::kPong:
      break;
    case Verb::kPub:
      s << ' ' << c.id << ' ' << show(c.subject) << ' ' << show(c.headers) << ' ' << show(c.payload) << ' '
        << (c.tied_to ? std::to_string(*c.tied_to) + ' ' + std::to_string(c.tie_index) : "-");
      break;
  }
  return s.str();
}

// What feeding a stream gave: each frame shown, then "error:<code>" if the parser failed.
// `version`: the one a command parser reads (a frame parser learns it from the stream's READY).
template <typename Parser, typename Out, typename Result>
std::vector<std::string> feed(const std::string& stream, const std::vector<std::size_t>& cuts, Result complete,
                              std::uint32_t version) {
  Parser parser;
  if constexpr (std::is_same_v<Parser, CommandParser>) parser.set_version(version);
  std::vector<std::string> seen;
  std::size_t from = 0;
  auto ends = cuts;
  ends.push_back(stream.size());
  for (std::size_t end : ends) {
    const std::string chunk = stream.substr(from, end - from);  // a buffer of its own, as a read gives
    from = end;
    std::string_view input(chunk);
    Out out;
    for (;;) {
      const auto result = parser.parse(input, out);
      if (result == complete) {
        seen.push_back(show(out));
        continue;
      }
      if (result == Result::kError) {
        seen.push_back(std::string("error:") + to_string(parser.code()));
        return seen;
      }
      break;
    }
  }
  return seen;
}

template <typename Parser, typename Out, typename Result>
void check_parse_vectors(const std::string& kind, Out (*from)(const json&), Result complete) {
  for (const auto& file : files_of_kind(kind)) {
    for (const auto& v : file.at("vectors")) {
      const std::string name = v.at("name");
      INFO(kind << ": " << name);
      const std::uint32_t version = v.value("version", 1U);
      const std::string stream = bytes_of(v.at("input"));
      std::vector<std::string> expected;
      for (const auto& f : v.at("frames")) expected.push_back(show(from(f)));
      if (!v.at("error").is_null()) expected.push_back("error:" + v.at("error").get<std::string>());
      CHECK(feed<Parser, Out>(stream, {}, complete, version) == expected);
      for (std::size_t cut = 0; cut <= stream.size(); ++cut) {
        // Each cut feeds the whole stream again, so the 16 KiB lines cost n^2: there, the cuts are
        // every byte within 256 of either end, where the limits bite, and every 61st in between.
        const bool near_an_end = cut < 256 || cut + 256 > stream.size();
        if (stream.size() > 4096 && !near_an_end && cut % 61 != 0) continue;
        const auto got = feed<Parser, Out>(stream, {cut}, complete, version);
        if (got != expected) {
          INFO("cut at byte " << cut);
          CHECK(got == expected);
          break;  // one failing cut says enough
        }
      }
      std::vector<std::size_t> every_byte;
      for (std::size_t i = 1; i < stream.size(); ++i) every_byte.push_back(i);
      CHECK(feed<Parser, Out>(stream, every_byte, complete, version) == expected);
    }
  }
}

}  // namespace

TEST_CASE("vectors: what jetfan sends parses as the vectors say, whole, cut once anywhere, and cut at every byte",
          "[unit]") {
  check_parse_vectors<DeliveryParser, Frame>("parse-frames", frame_from, DeliveryParser::Result::kFrame);
}

TEST_CASE("vectors: what handlers send parses as the vectors say, whole, cut once anywhere, and cut at every byte",
          "[unit]") {
  check_parse_vectors<CommandParser, Command>("parse-commands", command_from, CommandParser::Result::kCommand);
}

TEST_CASE("vectors: every error code is expected by some vector", "[unit]") {
  std::set<std::string> codes;
  for (const char* kind : {"parse-frames", "parse-commands"}) {
    for (const auto& file : files_of_kind(kind)) {
      for (const auto& v : file.at("vectors")) {
        if (!v.at("error").is_null()) codes.insert(v.at("error").get<std::string>());
      }
    }
  }
  for (int code = static_cast<int>(ErrorCode::kLineTooLong); code <= static_cast<int>(ErrorCode::kBadTraceparent);
       ++code) {
    const char* name = to_string(static_cast<ErrorCode>(code));
    INFO(name);
    CHECK(codes.count(name) == 1);
  }
}

TEST_CASE("vectors: commands encode to the canonical bytes", "[unit]") {
  for (const auto& file : files_of_kind("encode-commands")) {
    for (const auto& v : file.at("vectors")) {
      INFO(v.at("name").get<std::string>());
      const Command c = command_from(v.at("frame"));
      // The version of the connection the command is written on (1 unless the vector says).
      const std::uint32_t version = v.value("version", 1U);
      std::string out;
      switch (c.verb) {
        case Verb::kHello:
          append_hello(out, c.handler, c.version);
          break;
        case Verb::kAck:
          append_ack(out, c.id);
          break;
        case Verb::kNak:
          append_nak(out, c.id, c.delay_ms, c.reason, version);
          break;
        case Verb::kTerm:
          append_term(out, c.id, c.reason);
          break;
        case Verb::kWip:
          append_wip(out, c.id);
          break;
        case Verb::kPing:
          append_ping(out);
          break;
        case Verb::kPong:
          append_pong(out);
          break;
        case Verb::kPub:
          append_pub(out, c.id, c.subject, c.headers, c.payload, c.tied_to, c.tie_index);
          break;
      }
      CHECK(show(out) == show(bytes_of(v.at("bytes"))));
    }
  }
}

TEST_CASE("vectors: frames encode to the canonical bytes", "[unit]") {
  for (const auto& file : files_of_kind("encode-frames")) {
    for (const auto& v : file.at("vectors")) {
      INFO(v.at("name").get<std::string>());
      const Frame f = frame_from(v.at("frame"));
      // The version of the connection the frame is written on (1 unless the vector says).
      const std::uint32_t version = v.value("version", 1U);
      std::string out;
      switch (f.kind) {
        case Frame::Kind::kReady:
          append_ready(out, f.ready.version, f.ready.handler, f.ready.max_unconfirmed, f.ready.patterns);
          break;
        case Frame::Kind::kMsg:
          append_msg(out, version, f.delivery);
          break;
        case Frame::Kind::kErr:
          append_err(out, f.error);
          break;
        case Frame::Kind::kPing:
          append_ping(out);
          break;
        case Frame::Kind::kPong:
          append_pong(out);
          break;
        case Frame::Kind::kPubOk:
          append_pubok(out, f.publish.id, f.publish.stream, f.publish.seq, f.publish.duplicate);
          break;
        case Frame::Kind::kPubErr:
          append_puberr(out, f.publish.id, f.publish.code, f.publish.reason);
          break;
      }
      CHECK(show(out) == show(bytes_of(v.at("bytes"))));
    }
  }
}
