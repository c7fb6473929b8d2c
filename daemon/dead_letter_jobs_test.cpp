// DeadLetterJobs on its own: each job's steps driven by hand through a fake host, answered with
// JetStream's JSON as the server sends it. (daemon/dispatcher_test.cpp runs the same jobs through the
// real Dispatcher and core.)

#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

#include "dead_letter_jobs.hpp"

using namespace jetfan;

namespace {

struct Request {
  std::uint64_t id;
  std::string subject, body;
};

class FakeHost final : public DeadLetterJobHost {
 public:
  TimePoint now() const override { return clock; }
  bool serving() const override { return is_serving; }
  std::size_t instances(std::size_t) const override { return connected; }
  bool api_request(std::uint64_t id, const std::string& subject, const std::string& body) override {
    if (!connected_to_server) return false;
    requests.push_back(Request{id, subject, body});
    return true;
  }
  bool redrive(std::size_t handler, const jetstream::StoredMessage& letter) override {
    redriven.emplace_back(handler, letter.seq);
    return core_takes;
  }

  TimePoint clock{};
  bool is_serving = true;
  std::size_t connected = 1;
  bool connected_to_server = true;
  bool core_takes = true;
  std::vector<Request> requests;
  std::vector<std::pair<std::size_t, std::uint64_t>> redriven;
};

struct Log {
  std::vector<std::string> lines;
  std::optional<bool> ok;
  std::string last;
  DeadLetterJobOutput output() {
    return {[this](const std::string& line) {
              lines.push_back(line);
              return true;
            },
            [this](bool done_ok, const std::string& line) {
              ok = done_ok;
              last = line;
            }};
  }
};

Config two_handlers() {
  Config config;
  HandlerSettings audit;
  audit.name = "audit";
  HandlerSettings builder;
  builder.name = "builder";
  builder.dead_letter_subject = "dlq.builder";
  builder.patterns = {"ev.a.*"};
  config.handlers = {audit, builder};
  return config;
}

// MSG.GET's answer: a message on dlq.builder at `seq`, with `headers` (base64) and "payload".
std::string msg_get_answer(std::uint64_t seq, const std::string& headers) {
  return R"({"type":"io.nats.jetstream.api.v1.stream_msg_get_response","message":{"subject":"dlq.builder","seq":)" +
         std::to_string(seq) + R"(,"hdrs":")" + headers + R"(","data":"cGF5bG9hZA==","time":"2026-12-01T10:00:00Z"}})";
}

// A dead letter at `seq` of handler builder (or another one), headers and payload base64 as MSG.GET
// sends them: Jetfan-Handler, -Reason TERM, -Attempts 2, -Subject ev.a.x, -Sequence 17; "payload".
std::string letter(std::uint64_t seq, bool builders = true) {
  const std::string headers =
      builders ? "TkFUUy8xLjANCkpldGZhbi1IYW5kbGVyOiBidWlsZGVyDQpKZXRmYW4tUmVhc29uOiBURVJNDQpKZXRmYW4tQXR0ZW1wdHM6"
                 "IDINCkpldGZhbi1TdWJqZWN0OiBldi5hLngNCkpldGZhbi1TZXF1ZW5jZTogMTcNCg0K"
               : "TkFUUy8xLjANCkpldGZhbi1IYW5kbGVyOiBvdGhlcg0KDQo=";
  return msg_get_answer(seq, headers);
}
// Forged dead letters of handler builder, on its subject: one whose Jetfan-Subject would put fields
// of its own on the MSG line, and one whose key is not builder's.
std::string forged(std::uint64_t seq, bool fields) {
  const std::string headers =
      fields
          ? "TkFUUy8xLjANCkpldGZhbi1IYW5kbGVyOiBidWlsZGVyDQpKZXRmYW4tU3ViamVjdDogZXYuYS54IDQyNDIgMSAwIDAgMCAxIDkxIDEy"
            "Ng0KDQo="
          : "TkFUUy8xLjANCkpldGZhbi1IYW5kbGVyOiBidWlsZGVyDQpKZXRmYW4tU3ViamVjdDogcGF5cm9sbC5zZWNyZXQNCg0K";
  return msg_get_answer(seq, headers);
}
const char* kNames =
    R"({"type":"io.nats.jetstream.api.v1.stream_names_response","total":1,"offset":0,"limit":1024,"streams":["DLQ"]})";
const char* kNotFound = R"({"error":{"code":404,"err_code":10037,"description":"no message found"}})";
const char* kDeleted = R"({"type":"io.nats.jetstream.api.v1.stream_msg_delete_response","success":true})";

void answer(DeadLetterJobs& jobs, FakeHost& host, const std::string& json) {
  REQUIRE_FALSE(host.requests.empty());
  jobs.on_api_reply(host.requests.back().id, ApiReply{json, ""});
}

Effect settled(std::uint64_t redrive, bool again = false) {
  Effect effect{Effect::Kind::kRedriveSettled};
  effect.handler = 1;
  effect.redrive = redrive;
  effect.again = again;
  return effect;
}

}  // namespace

TEST_CASE("dead-letter jobs: a listing reads the stream one dead letter at a time, its handler's only", "[unit]") {
  const Config config = two_handlers();
  FakeHost host;
  DeadLetterJobs jobs(config, host);
  Log log;
  DeadLetterJob job;
  job.handler = "builder";
  REQUIRE_FALSE(jobs.start(job, log.output()));
  REQUIRE(host.requests.size() == 1);
  CHECK(host.requests[0].subject == "$JS.API.STREAM.NAMES");
  CHECK(host.requests[0].body == R"({"subject":"dlq.builder"})");
  answer(jobs, host, kNames);
  CHECK(host.requests.back().subject == "$JS.API.STREAM.MSG.GET.DLQ");
  CHECK(host.requests.back().body == R"({"next_by_subj":"dlq.builder","seq":1})");
  answer(jobs, host, letter(2, false));  // another handler's, on a shared subject: skipped
  CHECK(host.requests.back().body == R"({"next_by_subj":"dlq.builder","seq":3})");
  answer(jobs, host, letter(4));
  CHECK(host.requests.back().body == R"({"next_by_subj":"dlq.builder","seq":5})");
  answer(jobs, host, kNotFound);
  REQUIRE(log.ok == true);
  REQUIRE(log.lines.size() == 1);
  CHECK(log.lines[0] == "seq 4  subject ev.a.x  attempts 2  time 2026-12-01T10:00:00Z  reason TERM");
  CHECK(log.last == "OK 1 dead letter(s) of handler \"builder\" in stream \"DLQ\"");
  CHECK(jobs.running() == 0);
  CHECK(host.redriven.empty());
}

TEST_CASE("dead-letter jobs: a redrive deletes a dead letter only once the core said it is settled", "[unit]") {
  const Config config = two_handlers();
  FakeHost host;
  DeadLetterJobs jobs(config, host);
  Log log;
  DeadLetterJob job;
  job.kind = DeadLetterJob::Kind::kRedrive;
  job.handler = "builder";
  REQUIRE_FALSE(jobs.start(job, log.output()));
  CHECK(jobs.counts().at("builder").running == 1);
  answer(jobs, host, kNames);
  answer(jobs, host, letter(3));
  REQUIRE(host.redriven.size() == 1);
  CHECK(host.redriven[0] == std::pair<std::size_t, std::uint64_t>{1, 3});
  const std::size_t asked = host.requests.size();
  jobs.redrive_ended(settled(9));  // another redrive's: not this job's
  CHECK(host.requests.size() == asked);
  jobs.redrive_ended(settled(3));
  REQUIRE(host.requests.size() == asked + 1);
  CHECK(host.requests.back().subject == "$JS.API.STREAM.MSG.DELETE.DLQ");
  CHECK(host.requests.back().body == R"({"seq":3})");
  answer(jobs, host, kDeleted);
  CHECK(host.requests.back().body == R"({"next_by_subj":"dlq.builder","seq":4})");
  answer(jobs, host, letter(5));
  Effect dropped{Effect::Kind::kRedriveDropped};
  dropped.redrive = 5;
  jobs.redrive_ended(dropped);  // a reload took it away: the dead letter stays
  REQUIRE(log.ok == false);
  CHECK(log.last.find("1 confirmed and deleted, 0 failed again (dead-lettered anew), 1 kept") != std::string::npos);
  CHECK(jobs.counts().at("builder").running == 0);
  CHECK(jobs.counts().at("builder").confirmed == 1);
  CHECK(jobs.counts().at("builder").kept == 1);
  CHECK(host.requests.back().subject != "$JS.API.STREAM.MSG.DELETE.DLQ");  // 5 was not deleted
}

TEST_CASE("dead-letter jobs: refusals say why, and no output is made for them", "[unit]") {
  const Config config = two_handlers();
  FakeHost host;
  DeadLetterJobs jobs(config, host);
  Log log;
  DeadLetterJob job;
  job.kind = DeadLetterJob::Kind::kRedrive;
  job.handler = "nobody";
  CHECK(jobs.start(job, log.output()) == "no handler \"nobody\" is declared");
  job.handler = "audit";
  CHECK(jobs.start(job, log.output()) == "handler \"audit\" has no dead_letter subject: it has no dead letters");
  job.handler = "builder";
  host.connected = 0;
  CHECK(jobs.start(job, log.output()) == "handler \"builder\" has no connected instance to redrive to");
  host.connected = 1;
  REQUIRE_FALSE(jobs.start(job, log.output()));
  CHECK(jobs.start(job, log.output()) == "a redrive of handler \"builder\" is under way already");
  host.is_serving = false;
  CHECK(jobs.start(job, log.output()) == "jetfan is not serving (it is stopping)");
  CHECK_FALSE(log.ok);
  CHECK(host.requests.size() == 1);
}

TEST_CASE("dead-letter jobs: a request not sent, not answered, or a core that will not take a letter ends the job",
          "[unit]") {
  const Config config = two_handlers();
  FakeHost host;
  DeadLetterJobs jobs(config, host);
  DeadLetterJob job;
  job.handler = "builder";
  {
    Log log;
    host.connected_to_server = false;
    REQUIRE_FALSE(jobs.start(job, log.output()));
    CHECK(log.ok == false);
    CHECK(log.last.find("could not be sent (not connected to the server)") != std::string::npos);
    host.connected_to_server = true;
  }
  {
    Log log;
    REQUIRE_FALSE(jobs.start(job, log.output()));
    jobs.time_out(host.clock + std::chrono::milliseconds(4999));
    CHECK_FALSE(log.ok);
    jobs.time_out(host.clock + std::chrono::milliseconds(5000));
    CHECK(log.ok == false);
    CHECK(log.last.find("JetStream did not answer in time") != std::string::npos);
    jobs.on_api_reply(host.requests.back().id, ApiReply{kNames, ""});  // too late: dropped
    CHECK(jobs.running() == 0);
  }
  {
    Log log;
    job.kind = DeadLetterJob::Kind::kRedrive;
    host.core_takes = false;
    REQUIRE_FALSE(jobs.start(job, log.output()));
    answer(jobs, host, kNames);
    answer(jobs, host, letter(3));
    CHECK(log.ok == false);
    CHECK(log.last.find("seq 3 could not be redriven now (jetfan is stopping)") != std::string::npos);
    CHECK(jobs.counts().at("builder").running == 0);
  }
}

TEST_CASE("dead-letter jobs: a forged dead letter is listed as not redrivable, and a redrive leaves it in the stream",
          "[unit]") {
  const Config config = two_handlers();
  FakeHost host;
  DeadLetterJobs jobs(config, host);
  {
    Log log;
    DeadLetterJob job;
    job.handler = "builder";
    REQUIRE_FALSE(jobs.start(job, log.output()));
    answer(jobs, host, kNames);
    answer(jobs, host, forged(2, true));
    answer(jobs, host, forged(3, false));
    answer(jobs, host, kNotFound);
    REQUIRE(log.lines.size() == 2);
    CHECK(
        log.lines[0] ==
        "seq 2  subject ev.a.x 4242 1 0 0 0 1 91 126  attempts 0  time 2026-12-01T10:00:00Z  reason ?  NOT REDRIVABLE: "
        "its subject has the byte 0x20 at 6");
    CHECK(log.lines[1] ==
          "seq 3  subject payroll.secret  attempts 0  time 2026-12-01T10:00:00Z  reason ?  NOT REDRIVABLE: its key "
          "\"payroll.secret\" matches none of the handler's patterns");
    CHECK(log.last == "OK 2 dead letter(s) of handler \"builder\" in stream \"DLQ\" (2 not redrivable)");
  }
  {
    Log log;
    DeadLetterJob job;
    job.kind = DeadLetterJob::Kind::kRedrive;
    job.handler = "builder";
    REQUIRE_FALSE(jobs.start(job, log.output()));
    answer(jobs, host, kNames);
    answer(jobs, host, forged(2, true));
    // Not given to the core, not deleted: the next one is read.
    CHECK(host.redriven.empty());
    CHECK(host.requests.back().body == R"({"next_by_subj":"dlq.builder","seq":3})");
    answer(jobs, host, letter(4));  // a true one goes on as ever
    REQUIRE(host.redriven.size() == 1);
    jobs.redrive_ended(settled(4));
    answer(jobs, host, kDeleted);
    answer(jobs, host, kNotFound);
    CHECK(log.lines[0] == "seq 2: not redriven: its subject has the byte 0x20 at 6; it stays in the stream");
    REQUIRE(log.ok == false);  // a redrive that left one behind did not do all it was asked
    CHECK(log.last.find("1 confirmed and deleted, 0 failed again (dead-lettered anew), 0 kept, 1 not redrivable") !=
          std::string::npos);
    CHECK(jobs.counts().at("builder").refused == 1);
  }
}
