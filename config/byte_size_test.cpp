#include "byte_size.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

using jetfan::parse_byte_size;

namespace {

constexpr std::uint64_t kKi = 1024;
constexpr std::uint64_t kMi = 1024 * kKi;
constexpr std::uint64_t kGi = 1024 * kMi;

}  // namespace

TEST_CASE("sizes accept bytes and binary units, as before", "[unit]") {
  CHECK(parse_byte_size("4096") == 4096u);
  CHECK(parse_byte_size("0") == 0u);
  CHECK(parse_byte_size("100B") == 100u);
  CHECK(parse_byte_size("512KiB") == 512 * kKi);
  CHECK(parse_byte_size("64MiB") == 64 * kMi);
  CHECK(parse_byte_size("1GiB") == kGi);
  CHECK(parse_byte_size("2GiB") == 2 * kGi);
}

TEST_CASE("sizes read K, M and G as powers of 1000 and KB, MB, GB as powers of 1024, as nats-server does", "[unit]") {
  CHECK(parse_byte_size("1K") == 1'000u);
  CHECK(parse_byte_size("500K") == 500'000u);
  CHECK(parse_byte_size("32M") == 32'000'000u);
  CHECK(parse_byte_size("1G") == 1'000'000'000u);
  CHECK(parse_byte_size("1KB") == kKi);
  CHECK(parse_byte_size("32MB") == 32 * kMi);   // the report: max_held_bytes: 32MB
  CHECK(parse_byte_size("1GB") == kGi);         // nats-server: max_memory_store: 1GB
  CHECK(parse_byte_size("8MB") == 8'388'608u);  // nats-server: max_payload: 8MB
}

TEST_CASE("sizes accept Kubernetes' binary Ki, Mi and Gi", "[unit]") {
  CHECK(parse_byte_size("64Ki") == 64 * kKi);
  CHECK(parse_byte_size("32Mi") == 32 * kMi);
  CHECK(parse_byte_size("2Gi") == 2 * kGi);
}

TEST_CASE("sizes up to 2^64 - 1 bytes are accepted, larger ones refused", "[unit]") {
  CHECK(parse_byte_size("18446744073709551615") == 18'446'744'073'709'551'615u);
  CHECK(parse_byte_size("18446744073709551615B") == 18'446'744'073'709'551'615u);
  CHECK(parse_byte_size("18446744073709551K") == 18'446'744'073'709'551'000u);
  CHECK(parse_byte_size("18014398509481983KiB") == 18'014'398'509'481'983u * kKi);
  CHECK(parse_byte_size("18446744073G") == 18'446'744'073'000'000'000u);
  CHECK(parse_byte_size("17179869183GiB") == 17'179'869'183u * kGi);
  CHECK(parse_byte_size("17179869183GB") == 17'179'869'183u * kGi);
  for (const char* bad : {"18446744073709551616", "18446744073709551616B", "18446744073709552K", "18014398509481984KiB",
                          "18014398509481984KB", "18446744074G", "17179869184GiB", "17179869184Gi", "17592186044416MiB",
                          "99999999999999999999GiB", "18446744073709551615KiB"}) {
    INFO(bad);
    CHECK_FALSE(parse_byte_size(bad));
  }
}

TEST_CASE("sizes refuse fractions, signs, spaces, lower-case and unknown units", "[unit]") {
  for (const char* bad :
       {"",       "B",      "K",    "MiB",   "KB",      "64 MiB", " 64MiB", "64MiB ", "64MiB\n", "-1",     "+1",
        "-0",     "1.5MiB", "1.5",  "0.5K",  "1,5M",    "64mib",  "64mb",   "64Mb",   "64mB",    "64m",    "64k",
        "64kb",   "64kB",   "64ki", "64KIB", "64MIB",   "1T",     "1TB",    "1TiB",   "1Ti",     "1P",     "64iB",
        "64MiBB", "64BB",   "64Bi", "64MBi", "64bytes", "64b",    "0x10",   "1e6",    "1_000",   "64MiB64"}) {
    INFO(bad);
    CHECK_FALSE(parse_byte_size(bad));
  }
}

// docs/jetfan.schema.json's size pattern is what editors check size strings with: it must accept
// every text the grammar accepts (overflow is beyond a pattern) and refuse every text it refuses.
TEST_CASE("the config schema's size pattern is the grammar parse_byte_size accepts", "[schema]") {
  std::ifstream in(JETFAN_CONFIG_SCHEMA);
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  const auto schema = nlohmann::json::parse(text.str());
  std::vector<std::regex> patterns;
  for (const auto& form : schema.at("$defs").at("size").at("anyOf")) {
    if (form.contains("pattern")) patterns.emplace_back(form.at("pattern").get<std::string>());
  }
  REQUIRE(patterns.size() == 1);
  const std::regex& pattern = patterns.front();
  for (const char* good : {"4096", "0", "100B", "1K", "1KB", "1Ki", "1KiB", "32M", "32MB", "32Mi", "32MiB", "1G", "1GB",
                           "1Gi", "1GiB", "18446744073709551616"}) {  // the last: grammatical, too large
    INFO(good);
    CHECK(std::regex_search(good, pattern));
  }
  for (const char* bad : {"", "B", "MiB", "64 MiB", "-1", "1.5MiB", "64mib", "64mb", "64kB", "1T", "64iB", "64MiBB",
                          "64BB", "64Bi", "64MBi", "0x10", "64MiB\n"}) {
    INFO(bad);
    REQUIRE_FALSE(parse_byte_size(bad));
    CHECK_FALSE(std::regex_search(bad, pattern));
  }
}
