// `jetfan tail`: an observer on the control socket that sees messages as they arrive and never
// holds up the module.

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "control.hpp"
#include "mesh.hpp"

using namespace jetfan::testing;

namespace {

const std::string kHandlers =
    "  - name: builder\n    patterns: [\"a.*\"]\n"
    "  - name: audit\n    patterns: [\"#\"]\n";

// The next line that is not a notice of drops.
std::string next_record(TailStream& tail) {
  for (;;) {
    auto line = tail.line();
    REQUIRE(line);
    if (line->rfind("-- dropped", 0) != 0) return *line;
  }
}

}  // namespace

TEST_CASE("tail prints key, sequence, delivery, recipients, headers and payload of matching messages",
          "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config(kHandlers));
  mesh.start_handler("builder");
  mesh.start_handler("audit");
  TailStream all(mesh.control_path(), "");
  TailStream some(mesh.control_path(), "a.*");
  REQUIRE(all.line() == "OK tailing every message");
  REQUIRE(some.line() == "OK tailing a.*");
  const auto one = mesh.controller().publish("events.a.one", std::string("{\"m\":1}\x01", 8), {{"Trace", "7"}});
  const auto two = mesh.publish("b.two", std::string(300, 'y'));
  const auto three = mesh.controller().publish("other.thing", "z");
  REQUIRE(mesh.wait_settled());

  const std::string first = next_record(all);
  CHECK_THAT(first, Catch::Contains(" a.one seq " + std::to_string(one) +
                                    " delivery 1 -> builder, audit | headers: Trace: 7 | 8 bytes: {\"m\":1}."));
  CHECK_THAT(next_record(all), Catch::Contains(" b.two seq " + std::to_string(two) +
                                               " delivery 1 -> audit | 300 bytes: " + std::string(80, 'y') + "..."));
  CHECK_THAT(next_record(all), Catch::Contains(" other.thing seq " + std::to_string(three) +
                                               " delivery 1 -> unroutable (no key prefix): terminated | 1 bytes: z"));
  CHECK(next_record(some) == first);
  CHECK_FALSE(some.line(500ms));  // b.two and other.thing do not match a.*
  CHECK_THAT(control_request(mesh.control_path(), "TAIL a.>.b"), Catch::StartsWith("ERR pattern \"a.>.b\""));
}

TEST_CASE("a tail that never reads does not delay acks or grow jetfan's memory, and is told what it missed",
          "[integration][slow]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config("  - name: builder\n    patterns: [\"#\"]\n    max_inflight: 256\n"));
  mesh.start_handler("builder");
  TailStream stuck(mesh.control_path(), "");
  REQUIRE(stuck.line() == "OK tailing every message");
  FastPublisher publisher(mesh.url());
  // Long keys and payloads make each tail record about 400 bytes: 60,000 of them are 24 MB that a
  // buffer growing with the backlog would have to hold.
  const std::string key = "events.k." + std::string(200, 'k');
  const std::string payload(1024, 'p');
  const int kWarmup = 5000, kTotal = 60000;
  for (int i = 0; i < kWarmup; ++i) publisher.publish(key, payload);
  publisher.flush();
  REQUIRE(mesh.wait_settled(120s));  // the tail's buffer is full by now; acks went on regardless
  const long warm = rss_kib(mesh.jetfan().pid());
  for (int i = kWarmup; i < kTotal; ++i) publisher.publish(key, payload);
  publisher.flush();
  REQUIRE(mesh.wait_settled(300s));  // never held up by the tail that does not read
  const long after = rss_kib(mesh.jetfan().pid());
  INFO("jetfan RSS " << warm << " KiB after the warm-up, " << after << " KiB after " << kTotal << " messages");
  CHECK(after - warm < 6 * 1024);
  CHECK(mesh.seen("builder").size() == static_cast<std::size_t>(kTotal));

  const auto status = nlohmann::json::parse(control_request(mesh.control_path(), "STATUS JSON"));
  REQUIRE(status["tails"].size() == 1);
  const std::uint64_t dropped = status["tails"][0]["dropped"];
  CHECK(dropped > 40000);

  // Reading now, it gets what its buffer held, and is told how many it missed: together, all of them.
  std::uint64_t records = 0, told = 0;
  while (records + told < static_cast<std::uint64_t>(kTotal)) {
    const auto line = stuck.line(20s);
    REQUIRE(line);
    if (line->rfind("-- dropped ", 0) == 0) {
      told += std::stoull(line->substr(11));
    } else {
      ++records;
    }
  }
  CHECK(records + told == static_cast<std::uint64_t>(kTotal));
  CHECK(told == dropped);
  CHECK_FALSE(stuck.line(300ms));
}

TEST_CASE("tail names only the handlers a redelivery goes to", "[integration]") {
  Mesh mesh;
  mesh.start_jetfan(mesh.config(kHandlers, "delivery:\n  nak_delay: 50ms\n  nak_delay_max: 200ms\n"));
  mesh.start_handler("builder");
  mesh.start_handler("audit");
  TailStream all(mesh.control_path(), "");
  REQUIRE(all.line() == "OK tailing every message");
  const auto seq = mesh.publish("a.again", "nak1@builder");  // audit acks it, builder NAKs it once
  REQUIRE(mesh.wait_seen("builder", 1));
  REQUIRE(mesh.wait_settled());
  const std::string s = std::to_string(seq);
  CHECK_THAT(next_record(all), Catch::Contains(" a.again seq " + s + " delivery 1 -> builder, audit |"));
  CHECK_THAT(next_record(all), Catch::Contains(" a.again seq " + s + " delivery 2 -> builder |"));
  CHECK(mesh.seen("audit").size() == 1);  // as the tail says: audit did not get it again
}
