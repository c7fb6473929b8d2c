#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "format.hpp"
#include "prometheus_text.hpp"
#include "rate_window.hpp"
#include "status_render.hpp"
#include "tail_record.hpp"

using namespace jetfan;
using namespace std::chrono_literals;

namespace {

StatusSnapshot example() {
  StatusSnapshot s;
  s.version = "0.1.0";
  s.state = "serving";
  s.ready = true;
  s.now_unix_ms = 1'700'000'000'123;
  s.uptime_seconds = 75;
  s.config_file = "/etc/jetfan/builder.yaml";
  s.stream = "EVENTS";
  s.durable = "node1_builder";
  s.ack_policy = "explicit";
  s.ack_wait_seconds = 30;
  s.totals.arrived = 10;
  s.totals.acked = 7;
  s.totals.no_recipient = 1;
  s.held = 3;
  s.held_bytes = 3 * 1536;
  s.max_held = 20000;
  s.pull_batch = 4096;
  s.max_held_bytes = 64 << 20;
  s.totals.handed_back_for_room = 2;
  s.oldest_held_seconds = 12.5;
  HandlerView builder;
  builder.name = "builder";
  builder.patterns = {"a.*", "b.>"};
  builder.max_inflight = 64;
  builder.ack_timeout_seconds = 30;
  builder.instances.push_back(InstanceView{7, 1234, 1000, 1'700'000'000'000, 0.123});
  builder.stats.delivered = 9;
  builder.stats.acked = 8;
  builder.stats.failed_timeout = 1;
  builder.stats.confirmation_latency.observe(3ms);
  builder.stats.confirmation_latency.observe(20ms);
  builder.rates.delivered = 0.5;
  HandlerView audit;
  audit.name = "audit";
  audit.patterns = {"#"};
  audit.max_inflight = 64;
  audit.ack_timeout_seconds = 30;
  audit.queued = 3;
  audit.backlog = 5;
  audit.oldest_unconfirmed_seconds = 12.5;
  s.handlers = {builder, audit};
  s.recent_unmatched_keys = {"zzz.nobody"};
  s.unroutable_subjects = {{"other.thing", 2}};
  s.tails = {{"a.*", 4}};
  return s;
}

}  // namespace

TEST_CASE("status text: a handler with no instance and messages waiting is the first problem shown", "[unit]") {
  const std::string text = render_status_text(example());
  const auto first_newline = text.find('\n');
  const auto second_line = text.substr(first_newline + 1, text.find('\n', first_newline + 1) - first_newline - 1);
  CHECK(second_line ==
        "PROBLEM: handler \"audit\" has no instance connected and 3 message(s) waiting for it, the oldest for 12.5s: "
        "start it, or check that it connects to the socket");
  CHECK_THAT(text, Catch::Contains("instance: connection 7, pid 1234, uid 1000, connected 2023-11-14T22:13:20.000Z"));
  CHECK_THAT(text, Catch::Contains("delivered 9 (0.50/s), ACK 8 (0/s)"));
  CHECK_THAT(text, Catch::Contains("timeout 1 (0/s)"));
  CHECK_THAT(text, Catch::Contains("held:    3 of 20000 message(s), 4.5 KiB of 64 MiB, the oldest for 12.5s"));
  CHECK_THAT(text, Catch::Contains("p50 <= 5ms, p99 <= 25ms (2 confirmed)"));
  CHECK_THAT(text, Catch::Contains("no recipient, recent keys: zzz.nobody"));
  CHECK_THAT(text, Catch::Contains("unroutable subjects (no key prefix): other.thing (2)"));
  CHECK_THAT(text, Catch::Contains("1 tail(s): a.* (4 dropped)"));
  // A handler whose queue is empty is no problem, connected or not.
  auto calm = example();
  calm.handlers[1].queued = 0;
  CHECK(status_problems(calm).empty());
  // Full with nothing settling: the one holding everyone up is named, connected or not.
  auto stuck = calm;
  stuck.stall = StatusSnapshot::Stall{"builder", 7.0};
  REQUIRE(status_problems(stuck).size() == 1);
  CHECK(status_problems(stuck)[0] ==
        "jetfan holds all it may and nothing has settled for 7.0s: handler \"builder\" holds everyone up; unstick "
        "it, or set when_full: hand_back for it");
}

TEST_CASE("status JSON: versioned schema, the same figures as the text", "[unit]") {
  const auto doc = nlohmann::json::parse(render_status_json(example()));
  CHECK(doc["schema"] == "jetfan.status/1");
  CHECK(doc["ready"] == true);
  CHECK(doc["problems"].size() == 1);
  CHECK(doc["consumer"]["durable"] == "node1_builder");
  CHECK(doc["consumer"]["server"].is_null());
  CHECK(doc["messages"]["held"] == 3);
  CHECK(doc["messages"]["held_bytes"] == 4608);
  CHECK(doc["messages"]["max_held"] == 20000);
  CHECK(doc["messages"]["max_held_bytes"] == 64 << 20);
  CHECK(doc["pulls"]["batch"] == 4096);
  CHECK(doc["messages"]["handed_back_for_room"] == 2);
  CHECK(doc["messages"]["oldest_held_seconds"] == 12.5);
  CHECK(doc["messages"]["unroutable_subjects"][0]["subject"] == "other.thing");
  REQUIRE(doc["handlers"].size() == 2);
  CHECK(doc["handlers"][0]["instances"][0]["pid"] == 1234);
  CHECK(doc["handlers"][0]["counts"]["failed_timeout"] == 1);
  CHECK(doc["handlers"][0]["rates_per_second"]["delivered"] == 0.5);
  CHECK(doc["handlers"][1]["oldest_unconfirmed_seconds"] == 12.5);
  CHECK(doc["handlers"][0]["oldest_unconfirmed_seconds"].is_null());
  CHECK(doc["tails"][0]["dropped"] == 4);
  // Bytes that are not UTF-8 (a key is whatever the subject was) are replaced, not thrown about.
  auto odd = example();
  odd.recent_unmatched_keys = {"bad\xff"};
  CHECK_NOTHROW(nlohmann::json::parse(render_status_json(odd)));
}

TEST_CASE("Prometheus text: counters, per-handler series, cumulative histogram buckets", "[unit]") {
  const std::string text = render_prometheus(example());
  CHECK_THAT(text, Catch::Contains("# TYPE jetfan_messages_acked_total counter\njetfan_messages_acked_total 7\n"));
  CHECK_THAT(text, Catch::Contains("jetfan_messages_held 3\n"));
  CHECK_THAT(text, Catch::Contains("jetfan_messages_held_bytes 4608\n"));
  CHECK_THAT(text, Catch::Contains("jetfan_messages_held_limit 20000\n"));
  CHECK_THAT(text, Catch::Contains("jetfan_messages_held_limit_bytes 67108864\n"));
  CHECK_THAT(text, Catch::Contains("jetfan_messages_handed_back_for_room_total 2\n"));
  CHECK_THAT(text, Catch::Contains("jetfan_handler_queued{handler=\"audit\"} 3\n"));
  CHECK_THAT(text, Catch::Contains("jetfan_handler_backlog{handler=\"audit\"} 5\n"));
  CHECK_THAT(text,
             Catch::Contains("jetfan_handler_delivery_failures_total{handler=\"builder\",cause=\"timeout\"} 1\n"));
  CHECK_THAT(text, Catch::Contains(
                       "jetfan_handler_confirmation_latency_seconds_bucket{handler=\"builder\",le=\"0.0025\"} 0\n"));
  CHECK_THAT(text, Catch::Contains(
                       "jetfan_handler_confirmation_latency_seconds_bucket{handler=\"builder\",le=\"0.005\"} 1\n"));
  CHECK_THAT(text, Catch::Contains(
                       "jetfan_handler_confirmation_latency_seconds_bucket{handler=\"builder\",le=\"0.025\"} 2\n"));
  CHECK_THAT(
      text, Catch::Contains("jetfan_handler_confirmation_latency_seconds_bucket{handler=\"builder\",le=\"+Inf\"} 2\n"));
  CHECK_THAT(text, Catch::Contains("jetfan_handler_confirmation_latency_seconds_count{handler=\"builder\"} 2\n"));
  CHECK_THAT(text, Catch::Contains("jetfan_handler_confirmation_latency_seconds_sum{handler=\"builder\"} 0.023\n"));
  CHECK_THAT(text, Catch::Contains("jetfan_ready 1\n"));
  // Every sample's family was declared before it, once.
  std::size_t types = 0;
  for (std::size_t at = text.find("# TYPE "); at != std::string::npos; at = text.find("# TYPE ", at + 1)) ++types;
  std::size_t helps = 0;
  for (std::size_t at = text.find("# HELP "); at != std::string::npos; at = text.find("# HELP ", at + 1)) ++helps;
  CHECK(types == helps);
  CHECK(types >= 25);
}

TEST_CASE("Prometheus text: label values escaped, build info, the process, the server's consumer view", "[unit]") {
  CHECK(escape_label_value("plain-name_1") == "plain-name_1");
  CHECK(escape_label_value("a\\b\"c\nd") == "a\\\\b\\\"c\\nd");
  auto s = example();
  CHECK_THAT(render_prometheus(s), !Catch::Contains("jetfan_heap_in_use_bytes"));  // -1: not known
  s.stream = "EV\"EN\\TS\n";
  s.cnats_version = "3.4.1";
  s.compiler = "gcc 12.2.0";
  s.open_fds = 12;
  s.max_fds = 1024;
  s.cpu_seconds = 1.5;
  s.heap_in_use_bytes = 4096;
  std::string text = render_prometheus(s);
  CHECK_THAT(text, Catch::Contains(",stream=\"EV\\\"EN\\\\TS\\n\","));
  CHECK_THAT(text, Catch::Contains("jetfan_build_info{version=\"" + s.version +
                                   "\",cnats=\"3.4.1\",compiler=\"gcc 12.2.0\"} 1\n"));
  CHECK_THAT(text, Catch::Contains("process_open_fds 12\n"));
  CHECK_THAT(text, Catch::Contains("process_max_fds 1024\n"));
  CHECK_THAT(text, Catch::Contains("# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 1.5\n"));
  CHECK_THAT(text, Catch::Contains("process_start_time_seconds "));
  CHECK_THAT(text, Catch::Contains("# TYPE jetfan_heap_in_use_bytes gauge\njetfan_heap_in_use_bytes 4096\n"));
  CHECK_THAT(text, !Catch::Contains("jetfan_consumer_num_pending"));  // no answer yet: no series
  s.polled = ServerConsumerView{};
  s.polled->num_pending = 40;
  s.polled->num_ack_pending = 3;
  s.polled_age_seconds = 2;
  text = render_prometheus(s);
  CHECK_THAT(text, Catch::Contains("jetfan_consumer_num_pending 40\n"));
  CHECK_THAT(text, Catch::Contains("jetfan_consumer_num_ack_pending 3\n"));
  CHECK_THAT(text, Catch::Contains("jetfan_consumer_info_age_seconds 2\n"));
  // Every line is a comment or a sample whose value follows the labels; no line is broken by a value.
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    const std::string line = text.substr(start, end - start);
    INFO(line);
    CHECK((line.rfind("# ", 0) == 0 || line.rfind("jetfan_", 0) == 0 || line.rfind("process_", 0) == 0));
    start = end + 1;
  }
}

TEST_CASE("rates: per second over the window, by handler name", "[unit]") {
  RateWindow window(Duration(60'000));
  const TimePoint t0{};
  HandlerStats builder;
  window.add(t0, {{"builder", &builder}});
  builder.delivered = 30;
  builder.acked = 20;
  window.add(t0 + 30s, {{"builder", &builder}});
  builder.delivered = 120;
  auto r = window.rates("builder", builder, t0 + 60s);
  CHECK(r.delivered == Approx(2.0));
  CHECK(r.acked == Approx(20.0 / 60));
  window.add(t0 + 90s, {{"builder", &builder}});
  r = window.rates("builder", builder, t0 + 100s);  // from the sample at 30s, the last one before the window
  CHECK(r.delivered == Approx(90.0 / 70));
  CHECK(window.rates("fresh", builder, t0 + 100s).delivered == 0);
}

TEST_CASE("tail records: key, sequence, recipients, headers, shortened printable payload", "[unit]") {
  std::string out;
  const std::string payload = std::string("{\"m\":3}\x01\n") + std::string(100, 'x');
  append_tail_record(
      out, TailItem{1'700'000'000'123, "a.one", 42, 2, "NATS/1.0\r\nTrace: 7\r\nK: v\r\n\r\n", payload, 0b101},
      {"builder", "other", "audit"});
  CHECK(out ==
        "2023-11-14T22:13:20.123Z a.one seq 42 delivery 2 -> builder, audit | headers: Trace: 7; K: v | 109 bytes: "
        "{\"m\":3}.." +
            std::string(71, 'x') + "...\n");
  out.clear();
  append_tail_record(out, TailItem{0, "other.thing", 3, 1, "", "", 0, true}, {"builder"});
  CHECK(
      out ==
      "1970-01-01T00:00:00.000Z other.thing seq 3 delivery 1 -> unroutable (no key prefix): terminated | 0 bytes: \n");
  out.clear();
  append_tail_dropped(out, 12);
  CHECK(out == "-- dropped 12 message(s): this tail read too slowly\n");
}

TEST_CASE("format helpers", "[unit]") {
  CHECK(format::number(0.25) == "0.25");
  CHECK(format::number(1e-4) == "0.0001");
  CHECK(format::duration(0.85) == "850ms");
  CHECK(format::duration(0.00025) == "250us");
  CHECK(format::duration(245) == "4m05s");
  CHECK(format::rate(1234) == "1.2k");
  CHECK(format::bytes(512) == "512 B");
  CHECK(format::bytes(4608) == "4.5 KiB");
  CHECK(format::bytes(64 << 20) == "64 MiB");
  CHECK(format::bytes(1536ull << 20) == "1.5 GiB");
}

TEST_CASE("retry figures and pause are shown in status, status json and metrics", "[unit]") {
  StatusSnapshot s = example();
  HandlerView& builder = s.handlers.at(0);
  builder.paused = true;
  builder.max_attempts = 5;
  builder.dead_letter_subject = "dlq.builder";
  builder.stats.attempts.observe(1);
  builder.stats.attempts.observe(5);
  builder.stats.dead_lettered_used_up = 1;
  builder.stats.dead_letter_failures = 2;
  const std::string text = render_prometheus(s);
  CHECK_THAT(text, Catch::Contains("jetfan_handler_paused{handler=\"builder\"} 1\n"));
  CHECK_THAT(text, Catch::Contains("jetfan_handler_attempts_bucket{handler=\"builder\",le=\"1\"} 1\n"));
  CHECK_THAT(text, Catch::Contains("jetfan_handler_attempts_bucket{handler=\"builder\",le=\"3\"} 1\n"));
  CHECK_THAT(text, Catch::Contains("jetfan_handler_attempts_bucket{handler=\"builder\",le=\"5\"} 2\n"));
  CHECK_THAT(text, Catch::Contains("jetfan_handler_attempts_sum{handler=\"builder\"} 6\n"));
  CHECK_THAT(text, Catch::Contains("jetfan_handler_dead_letters_total{handler=\"builder\",reason=\"used_up\"} 1\n"));
  CHECK_THAT(text, Catch::Contains("jetfan_handler_dead_letter_publish_failures_total{handler=\"builder\"} 2\n"));
  const auto doc = nlohmann::json::parse(render_status_json(s));
  CHECK(doc["handlers"][0]["paused"] == true);
  CHECK(doc["handlers"][0]["retry"]["max_attempts"] == 5);
  CHECK(doc["handlers"][0]["retry"]["attempts"]["buckets"]["5"] == 1);
  CHECK(doc["handlers"][0]["retry"]["dead_letters"]["used_up"] == 1);
  const std::string status = render_status_text(s);
  CHECK_THAT(status, Catch::Contains("PAUSED"));
  CHECK_THAT(status, Catch::Contains("dead letters to dlq.builder"));
}

TEST_CASE("max_rate, and messages held back by it, are shown in status, status json and metrics", "[unit]") {
  StatusSnapshot s = example();
  s.handlers.at(0).max_rate = 12.5;
  s.handlers.at(0).rate_waiting = true;
  const std::string text = render_prometheus(s);
  CHECK_THAT(text, Catch::Contains("jetfan_handler_max_rate{handler=\"builder\"} 12.5\n"));
  CHECK_THAT(text, Catch::Contains("jetfan_handler_max_rate{handler=\"audit\"} 0\n"));
  CHECK_THAT(text, Catch::Contains("jetfan_handler_rate_waiting{handler=\"builder\"} 1\n"));
  CHECK_THAT(text, Catch::Contains("jetfan_handler_rate_waiting{handler=\"audit\"} 0\n"));
  const auto doc = nlohmann::json::parse(render_status_json(s));
  CHECK(doc["handlers"][0]["max_rate"] == 12.5);
  CHECK(doc["handlers"][0]["rate_waiting"] == true);
  CHECK(doc["handlers"][1]["max_rate"].is_null());
  const std::string status = render_status_text(s);
  CHECK_THAT(status, Catch::Contains("; max_inflight 64, max_rate 12.5, ack_timeout 30.0s"));
  CHECK_THAT(status, Catch::Contains("; held back by max_rate\n"));
}

TEST_CASE("an adaptive in-flight limit and its cuts are shown in status, status json and metrics", "[unit]") {
  StatusSnapshot s = example();
  HandlerView& builder = s.handlers.at(0);
  builder.adaptive_inflight = true;
  builder.min_inflight = 2;
  builder.inflight_limit = 11;
  builder.stats.inflight_cuts[static_cast<std::size_t>(jetfan::AdaptiveLimit::Cut::kLatency)] = 3;
  builder.stats.inflight_cuts[static_cast<std::size_t>(jetfan::AdaptiveLimit::Cut::kNak)] = 1;
  builder.last_cut = "latency";
  builder.last_cut_seconds = 4.5;
  s.handlers.at(1).inflight_limit = 64;
  const std::string text = render_prometheus(s);
  CHECK_THAT(text, Catch::Contains("jetfan_handler_inflight_limit{handler=\"builder\"} 11\n"));
  CHECK_THAT(text, Catch::Contains("jetfan_handler_inflight_limit{handler=\"audit\"} 64\n"));
  CHECK_THAT(text,
             Catch::Contains("jetfan_handler_inflight_limit_cuts_total{handler=\"builder\",cause=\"latency\"} 3\n"));
  CHECK_THAT(text, Catch::Contains("jetfan_handler_inflight_limit_cuts_total{handler=\"builder\",cause=\"nak\"} 1\n"));
  CHECK_THAT(text,
             Catch::Contains("jetfan_handler_inflight_limit_cuts_total{handler=\"audit\",cause=\"timeout\"} 0\n"));
  const auto doc = nlohmann::json::parse(render_status_json(s));
  CHECK(doc["handlers"][0]["inflight_limit"] == 11);
  CHECK(doc["handlers"][0]["adaptive_inflight"]["min_inflight"] == 2);
  CHECK(doc["handlers"][0]["adaptive_inflight"]["cuts"]["latency"] == 3);
  CHECK(doc["handlers"][0]["adaptive_inflight"]["last_cut"] == "latency");
  CHECK(doc["handlers"][0]["adaptive_inflight"]["last_cut_seconds"] == 4.5);
  CHECK(doc["handlers"][1]["adaptive_inflight"].is_null());
  CHECK(doc["handlers"][1]["inflight_limit"] == 64);
  const std::string status = render_status_text(s);
  CHECK_THAT(status, Catch::Contains("  limit:   adaptive, 11 in flight at most now over its instances (2 to 64 each); "
                                     "cuts: 1 nak, 0 timeout, 3 latency, the last (latency) 4.5s ago\n"));
  CHECK(status.find("limit:   adaptive") == status.rfind("limit:   adaptive"));  // the audit handler has none
}

TEST_CASE("redrive progress is shown in status, status json and metrics", "[unit]") {
  StatusSnapshot s = example();
  HandlerView& builder = s.handlers.at(0);
  builder.redrive_running = 1;
  builder.redrive_confirmed = 4;
  builder.redrive_again = 1;
  const std::string text = render_prometheus(s);
  CHECK_THAT(text, Catch::Contains("jetfan_handler_redrive_running{handler=\"builder\"} 1\n"));
  CHECK_THAT(text, Catch::Contains("jetfan_handler_redrives_total{handler=\"builder\",outcome=\"confirmed\"} 4\n"));
  CHECK_THAT(text, Catch::Contains("jetfan_handler_redrives_total{handler=\"builder\",outcome=\"again\"} 1\n"));
  CHECK_THAT(text, Catch::Contains("jetfan_handler_redrives_total{handler=\"builder\",outcome=\"kept\"} 0\n"));
  const auto doc = nlohmann::json::parse(render_status_json(s));
  CHECK(doc["handlers"][0]["redrive"]["running"] == true);
  CHECK(doc["handlers"][0]["redrive"]["confirmed"] == 4);
  CHECK(doc["handlers"][1]["redrive"]["running"] == false);
  CHECK_THAT(render_status_text(s), Catch::Contains("redrive: RUNNING; 4 confirmed and deleted, 1 failed again"));
}

TEST_CASE("a handler's publishes are shown in status, status json and metrics", "[unit]") {
  StatusSnapshot s = example();
  HandlerView& builder = s.handlers.at(0);
  builder.publish_subjects = {"out.>", "audit.*"};
  builder.publishes.stored = 5;
  builder.publishes.duplicates = 1;
  builder.publishes.refused = 2;
  builder.publishes.in_flight = 3;
  builder.publishes.latency.observe(std::chrono::milliseconds(2));
  const std::string text = render_prometheus(s);
  CHECK_THAT(text, Catch::Contains("jetfan_handler_publishes_total{handler=\"builder\",outcome=\"stored\"} 5\n"));
  CHECK_THAT(text, Catch::Contains("jetfan_handler_publishes_total{handler=\"builder\",outcome=\"duplicate\"} 1\n"));
  CHECK_THAT(text, Catch::Contains("jetfan_handler_publishes_total{handler=\"builder\",outcome=\"refused\"} 2\n"));
  CHECK_THAT(text, Catch::Contains("jetfan_handler_publishes_total{handler=\"audit\",outcome=\"timeout\"} 0\n"));
  CHECK_THAT(text, Catch::Contains("jetfan_handler_publishes_in_flight{handler=\"builder\"} 3\n"));
  CHECK_THAT(text, Catch::Contains("jetfan_handler_publish_latency_seconds_count{handler=\"builder\"} 1\n"));
  const auto doc = nlohmann::json::parse(render_status_json(s));
  CHECK(doc["handlers"][0]["publish"]["subjects"] == nlohmann::json::array({"out.>", "audit.*"}));
  CHECK(doc["handlers"][0]["publish"]["stored"] == 5);
  CHECK(doc["handlers"][0]["publish"]["in_flight"] == 3);
  CHECK(doc["handlers"][1]["publish"]["subjects"].empty());
  const std::string status = render_status_text(s);
  CHECK_THAT(status,
             Catch::Contains("  publish: to out.>, audit.*; 5 stored, 1 duplicate, 2 refused, 0 failed, 0 timed "
                             "out; 3 waiting for the server"));
  CHECK(status.find("publish: to") == status.rfind("publish: to"));  // audit may not publish and did not try
}

TEST_CASE("messages with an unreadable subject are shown in status, status json and metrics", "[unit]") {
  StatusSnapshot s = example();
  s.unreadable.push_back({4, "events.a\\rb", 1'700'000'000'000, 3, 2, "dead-lettered for builder; terminated"});
  s.unreadable_total = 2;
  CHECK_THAT(render_prometheus(s), Catch::Contains("jetfan_messages_unreadable_subject_total 2\n"));
  CHECK_THAT(render_status_text(s),
             Catch::Contains("unreadable subject: stream seq 4 \"events.a\\rb\" broke the NATS connection (found 2 "
                             "times); dead-lettered for builder; terminated; 3 delivery(ies) it took handed back"));
  const auto doc = nlohmann::json::parse(render_status_json(s));
  CHECK(doc["messages"]["unreadable_subject"][0]["stream_seq"] == 4);
  CHECK(doc["messages"]["unreadable_subject"][0]["subject"] == "events.a\\rb");
  CHECK(doc["messages"]["unreadable_subject_total"] == 2);
  CHECK(doc["messages"]["unreadable_subject"][0]["outcome"] == "dead-lettered for builder; terminated");
}

TEST_CASE("the confirmation ledger is shown in status, status json and metrics, and nowhere when off", "[unit]") {
  StatusSnapshot off = example();
  CHECK(nlohmann::json::parse(render_status_json(off))["ledger"].is_null());
  CHECK_THAT(render_status_text(off), !Catch::Contains("ledger"));
  CHECK_THAT(render_prometheus(off), !Catch::Contains("jetfan_ledger_"));

  StatusSnapshot s = example();
  s.handlers.at(1).queued = 0;  // no other problem: the ledger's alone is counted below
  s.ledger = StatusSnapshot::Ledger{"jetfan_ledger", 1.0, 12, 11, 2, 1, 3, 4, 1, ""};
  std::string status = render_status_text(s);
  CHECK_THAT(status,
             Catch::Contains("\nledger:  bucket jetfan_ledger, interval 1.0s; 12 written, 11 deleted, 2 failed, "
                             "1 dropped, 3 loaded; 4 tracked, 1 waiting\n"));
  CHECK_THAT(status, !Catch::Contains("NOT WRITTEN"));
  CHECK(status_problems(s).empty());
  auto doc = nlohmann::json::parse(render_status_json(s));
  CHECK(doc["ledger"] == nlohmann::json{{"bucket", "jetfan_ledger"},
                                        {"interval_seconds", 1.0},
                                        {"puts", 12},
                                        {"deletes", 11},
                                        {"failed", 2},
                                        {"dropped", 1},
                                        {"loaded", 3},
                                        {"tracked", 4},
                                        {"waiting", 1},
                                        {"not_written", nullptr}});
  std::string text = render_prometheus(s);
  CHECK_THAT(text, Catch::Contains("# TYPE jetfan_ledger_writes_total counter\n"));
  CHECK_THAT(text, Catch::Contains("jetfan_ledger_writes_total{kind=\"put\"} 12\n"));
  CHECK_THAT(text, Catch::Contains("jetfan_ledger_writes_total{kind=\"delete\"} 11\n"));
  CHECK_THAT(text, Catch::Contains("# TYPE jetfan_ledger_write_failures_total counter\n"
                                   "jetfan_ledger_write_failures_total 2\n"));
  CHECK_THAT(text, Catch::Contains("# TYPE jetfan_ledger_dropped_total counter\njetfan_ledger_dropped_total 1\n"));
  CHECK_THAT(text, Catch::Contains("# TYPE jetfan_ledger_loaded_total counter\njetfan_ledger_loaded_total 3\n"));
  CHECK_THAT(text, Catch::Contains("# TYPE jetfan_ledger_tracked gauge\njetfan_ledger_tracked 4\n"));
  CHECK_THAT(text, Catch::Contains("# TYPE jetfan_ledger_waiting gauge\njetfan_ledger_waiting 1\n"));
  CHECK_THAT(text, Catch::Contains("# TYPE jetfan_ledger_writing gauge\njetfan_ledger_writing 1\n"));

  // Not written: a problem shown first and on its line, 0 for the alert, and still ready: the ledger
  // never decides an ack, so its outage costs duplicates after a restart, not messages.
  s.ledger->not_written = "the server did not answer for 2m05s (timeout)";
  const std::string problem =
      "the confirmation ledger (bucket jetfan_ledger) is not being written: the server did not answer for 2m05s "
      "(timeout); after a restart, handlers may get again messages they confirmed (duplicates, never lost messages)";
  REQUIRE(status_problems(s).size() == 1);
  CHECK(status_problems(s)[0] == problem);
  status = render_status_text(s);
  CHECK_THAT(status, Catch::Contains("\nPROBLEM: " + problem + "\nready:   yes\n"));
  CHECK_THAT(status, Catch::Contains("\nledger:  NOT WRITTEN: the server did not answer for 2m05s (timeout); a "
                                     "restart now costs duplicates, never messages\n"));
  doc = nlohmann::json::parse(render_status_json(s));
  CHECK(doc["ready"] == true);
  CHECK(doc["problems"] == nlohmann::json::array({problem}));
  CHECK(doc["ledger"]["not_written"] == "the server did not answer for 2m05s (timeout)");
  text = render_prometheus(s);
  CHECK_THAT(text, Catch::Contains("jetfan_ledger_writing 0\n"));
  CHECK_THAT(text, Catch::Contains("jetfan_ready 1\n"));
}
