// proto/PROTOCOL.md's Limits table is what a handler author reads about the limits on a connection.
// This holds it to the code: each per-connection limit of the config appears with its key and its
// default as config/defaults.hpp has it (through a default Config) and config/jetfan.example.yaml
// writes it, and the protocol's fixed limits with proto/protocol.hpp's values.
#include <catch2/catch.hpp>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "byte_size.hpp"
#include "config.hpp"
#include "duration.hpp"
#include "protocol.hpp"

namespace {

using Row = std::vector<std::string>;

std::string read_file(const char* path) {
  std::ifstream in(path);
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(' ');
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(' ') - first + 1);
}

// The rows of the table under "## Limits", as cells, without the header and separator rows.
std::vector<Row> limits_rows(const std::string& doc) {
  const auto start = doc.find("\n## Limits\n");
  REQUIRE(start != std::string::npos);
  const auto end = doc.find("\n## ", start + 1);
  std::istringstream section(doc.substr(start, end - start));
  std::vector<Row> rows;
  bool header = true;
  for (std::string line; std::getline(section, line);) {
    if (line.empty() || line[0] != '|') continue;
    Row cells;
    std::string cell;
    std::istringstream parts(line.substr(1));
    while (std::getline(parts, cell, '|')) cells.push_back(trim(cell));
    if (header || cells.front().starts_with("---")) {
      header = false;
      continue;
    }
    rows.push_back(cells);
  }
  return rows;
}

// The row whose key column is `key` in backticks; empty when there is none.
Row row_with_key(const std::vector<Row>& rows, const std::string& key) {
  for (const auto& row : rows) {
    if (row.size() >= 4 && row[1] == "`" + key + "`") return row;
  }
  return {};
}

// The row whose limit column starts with `limit`; empty when there is none.
Row row_of_limit(const std::vector<Row>& rows, const std::string& limit) {
  for (const auto& row : rows) {
    if (row.size() >= 4 && row[0].starts_with(limit)) return row;
  }
  return {};
}

// The first `code` span of a cell, without its backticks.
std::string first_code(const std::string& cell) {
  const auto open = cell.find('`');
  const auto close = open == std::string::npos ? open : cell.find('`', open + 1);
  return close == std::string::npos ? "" : cell.substr(open + 1, close - open - 1);
}

}  // namespace

TEST_CASE("PROTOCOL.md's Limits table gives each per-connection limit of the config its key and default", "[unit]") {
  const auto rows = limits_rows(read_file(JETFAN_PROTOCOL_DOC));
  const jetfan::SocketSettings socket;    // the defaults, from config/defaults.hpp
  const jetfan::HandlerSettings handler;  // likewise
  const auto example = jetfan::load_config_file(JETFAN_EXAMPLE_CONFIG);
  REQUIRE(example.config);
  REQUIRE(!example.config->handlers.empty());
  const auto& example_socket = example.config->socket;
  const auto& example_handler = example.config->handlers.front();

  const std::vector<std::tuple<std::string, jetfan::Duration, jetfan::Duration>> durations = {
      {"socket.hello_timeout", socket.hello_timeout, example_socket.hello_timeout},
      {"socket.idle_timeout", socket.idle_timeout, example_socket.idle_timeout},
      {"socket.ping_timeout", socket.ping_timeout, example_socket.ping_timeout},
  };
  for (const auto& [key, default_value, example_value] : durations) {
    INFO(key);
    const Row row = row_with_key(rows, key);
    REQUIRE(!row.empty());
    CHECK(jetfan::parse_duration(first_code(row[2])) == default_value);
    CHECK(example_value == default_value);  // the example writes every setting with its default
  }

  const std::vector<std::tuple<std::string, std::uint64_t, std::uint64_t>> counts = {
      {"socket.max_connections", socket.max_connections, example_socket.max_connections},
      {"socket.max_unidentified", socket.max_unidentified, example_socket.max_unidentified},
      {"handlers[].max_inflight", static_cast<std::uint64_t>(handler.max_inflight),
       static_cast<std::uint64_t>(example_handler.max_inflight)},
      {"handlers[].max_instances", handler.max_instances, example_handler.max_instances},
  };
  for (const auto& [key, default_value, example_value] : counts) {
    INFO(key);
    const Row row = row_with_key(rows, key);
    REQUIRE(!row.empty());
    CHECK(first_code(row[2]) == std::to_string(default_value));
    CHECK(example_value == default_value);
  }

  const Row output = row_with_key(rows, "socket.max_output_buffer");
  REQUIRE(!output.empty());
  CHECK(jetfan::parse_byte_size(first_code(output[2])) == socket.max_output_buffer);
  CHECK(example_socket.max_output_buffer == socket.max_output_buffer);

  // Every row says what happens past it.
  for (const auto& row : rows) {
    INFO(row.front());
    CHECK(row.size() == 4);
    CHECK(!row.back().empty());
  }
}

TEST_CASE("PROTOCOL.md's Limits table gives the protocol's fixed limits their values", "[unit]") {
  const auto rows = limits_rows(read_file(JETFAN_PROTOCOL_DOC));
  const Row to_jetfan = row_of_limit(rows, "control line, handler → jetfan");
  const Row from_jetfan = row_of_limit(rows, "control line, jetfan → handler");
  const Row body = row_of_limit(rows, "body");
  const Row version = row_of_limit(rows, "protocol version");
  REQUIRE(!to_jetfan.empty());
  REQUIRE(!from_jetfan.empty());
  REQUIRE(!body.empty());
  REQUIRE(!version.empty());
  CHECK(to_jetfan[2] == std::to_string(jetfan::proto::kMaxCommandLine) + " bytes");
  CHECK(from_jetfan[2] == "at most " + std::to_string(jetfan::proto::kMaxDeliveryLine) + " bytes");
  CHECK(body[2] == "at most " + std::to_string(jetfan::proto::kMaxBody >> 20) + " MiB");
  CHECK(jetfan::proto::kMaxBody % (1 << 20) == 0);
  CHECK(version[2] == "1 to " + std::to_string(jetfan::proto::kLatestVersion));
}
