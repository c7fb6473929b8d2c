// Parses every answer recorded from a real nats-server (recorded/<version>/<name>.json, written by
// record.py, which says what led to each) with this folder's parsers and checks what they read.
// Each case takes one kind of answer across all versions; the first case holds the set of files to
// what the cases know, so a new recording is either checked or fails here.

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "consumer_info.hpp"
#include "publish_ack.hpp"
#include "stream_info.hpp"
#include "stream_message.hpp"
#include "stream_names.hpp"

using namespace jetfan::jetstream;
using std::chrono::seconds;
namespace fs = std::filesystem;

namespace {

// Every server before 2.11 answered these; 2.11 and later these and kNewer.
const std::set<std::string> kEvery = {"consumer_info",
                                      "consumer_info_no_stream",
                                      "consumer_info_not_found",
                                      "msg_delete",
                                      "msg_delete_error",
                                      "msg_get",
                                      "msg_get_empty",
                                      "msg_get_headers",
                                      "msg_get_last",
                                      "msg_get_last_not_found",
                                      "msg_get_next",
                                      "msg_get_next_not_found",
                                      "msg_get_no_stream",
                                      "msg_get_not_found",
                                      "publish_ack",
                                      "publish_ack_duplicate",
                                      "publish_ack_error",
                                      "stream_info",
                                      "stream_info_no_stream",
                                      "stream_names",
                                      "stream_names_none"};
const std::set<std::string> kNewer = {"consumer_info_overflow", "consumer_info_paused", "consumer_info_pinned"};

struct Version {
  int major = 0, minor = 0, patch = 0;
  bool at_least(int ma, int mi) const { return major > ma || (major == ma && minor >= mi); }
};

Version version_of(const std::string& name) {
  Version v;
  char dot = 0;
  std::istringstream in(name);
  in >> v.major >> dot >> v.minor >> dot >> v.patch;
  return v;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// version -> the names of its recorded answers.
std::map<std::string, std::set<std::string>> recorded() {
  std::map<std::string, std::set<std::string>> out;
  for (const auto& dir : fs::directory_iterator(JETFAN_RECORDED_DIR)) {
    if (!dir.is_directory()) continue;
    for (const auto& file : fs::directory_iterator(dir.path())) {
      out[dir.path().filename().string()].insert(file.path().filename().string());
    }
  }
  return out;
}

// The answer `name` of each version that has one: (version, text).
std::vector<std::pair<std::string, std::string>> answers(const std::string& name) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [version, files] : recorded()) {
    if (files.count(name + ".json")) {
      out.emplace_back(version, read_file(fs::path(JETFAN_RECORDED_DIR) / version / (name + ".json")));
    }
  }
  REQUIRE_FALSE(out.empty());
  return out;
}

// What `read` holds, which must be a T (a copy: `read` is most often a temporary).
template <typename T, typename Variant>
T must_be(const Variant& read) {
  REQUIRE(std::holds_alternative<T>(read));
  return std::get<T>(read);
}

void check_server_error(const ApiError& error, int code, int err_code) {
  CHECK(error.from_server());
  CHECK(error.code == code);
  CHECK(error.err_code == err_code);
  CHECK_FALSE(error.description.empty());
}

StoredMessage stored(const std::string& text) { return must_be<StoredMessage>(parse_msg_get(text)); }

}  // namespace

TEST_CASE("recorded answers: 2.9, 2.10 and a server since 2.11, each with every answer and none unknown", "[unit]") {
  const auto versions = recorded();
  CHECK(versions.size() >= 3);
  bool old = false, middle = false, newer = false;
  for (const auto& [version, files] : versions) {
    INFO("recorded/" << version);
    const Version v = version_of(version);
    old = old || (v.major == 2 && v.minor == 9);
    middle = middle || (v.major == 2 && v.minor == 10);
    newer = newer || v.at_least(2, 11);
    std::set<std::string> expected;
    for (const auto& name : kEvery) expected.insert(name + ".json");
    if (v.at_least(2, 11)) {
      for (const auto& name : kNewer) expected.insert(name + ".json");
    }
    CHECK(files == expected);
  }
  CHECK(old);
  CHECK(middle);
  CHECK(newer);
}

TEST_CASE("recorded answers: consumer info of a consumer with 2 delivered and 1 acked", "[unit]") {
  for (const auto& [version, text] : answers("consumer_info")) {
    INFO(version);
    const auto info = must_be<ConsumerInfo>(parse_consumer_info(text));
    CHECK(info.stream_name == "EVENTS");
    CHECK(info.name == "worker");
    CHECK(info.durable_name == "worker");
    CHECK(info.ack_policy == "explicit");
    CHECK(info.ack_wait == seconds(30));
    CHECK(info.max_deliver == 5);
    CHECK(info.max_ack_pending == 1000);
    CHECK(info.filter_subject == "events.>");
    CHECK(info.deliver_subject.empty());
    CHECK(info.delivered.stream_seq == 2);
    CHECK(info.delivered.consumer_seq == 2);
    CHECK(info.ack_floor.stream_seq == 1);
    CHECK(info.ack_floor.consumer_seq == 1);
    CHECK(info.num_ack_pending == 1);
    CHECK(info.num_redelivered == 0);
    CHECK(info.num_waiting == 0);
    CHECK(info.num_pending == 3);
    CHECK(info.priority_groups.empty());
    CHECK(info.priority_policy.empty());
    CHECK(info.group_states.empty());
    CHECK_FALSE(info.paused);
    CHECK(info.pause_until.empty());
  }
}

TEST_CASE("recorded answers: consumer info of a missing consumer", "[unit]") {
  for (const auto& [version, text] : answers("consumer_info_not_found")) {
    INFO(version);
    check_server_error(must_be<ApiError>(parse_consumer_info(text)), 404, kConsumerNotFound);
  }
}

TEST_CASE("recorded answers: consumer info in a missing stream", "[unit]") {
  for (const auto& [version, text] : answers("consumer_info_no_stream")) {
    INFO(version);
    check_server_error(must_be<ApiError>(parse_consumer_info(text)), 404, kStreamNotFound);
  }
}

TEST_CASE("recorded answers: consumer info of a pinned_client priority group, pinned by a pull", "[unit]") {
  for (const auto& [version, text] : answers("consumer_info_pinned")) {
    INFO(version);
    const auto info = must_be<ConsumerInfo>(parse_consumer_info(text));
    CHECK(info.priority_groups == std::vector<std::string>{"jobs"});
    CHECK(info.priority_policy == "pinned_client");
    CHECK(info.pinned_ttl == seconds(120));
    REQUIRE(info.group_states.size() == 1);
    CHECK(info.group_states[0].group == "jobs");
    CHECK_FALSE(info.group_states[0].pinned_client_id.empty());
    CHECK(info.delivered.stream_seq == 1);
    CHECK(info.num_ack_pending == 1);
    CHECK(info.num_pending == 4);
    CHECK_FALSE(info.paused);
  }
}

TEST_CASE("recorded answers: consumer info of an overflow priority group", "[unit]") {
  for (const auto& [version, text] : answers("consumer_info_overflow")) {
    INFO(version);
    const auto info = must_be<ConsumerInfo>(parse_consumer_info(text));
    CHECK(info.priority_groups == std::vector<std::string>{"jobs", "more"});
    CHECK(info.priority_policy == "overflow");
    CHECK(info.pinned_ttl.count() == 0);
    CHECK(info.num_pending == 5);
    for (const auto& state : info.group_states) CHECK(state.pinned_client_id.empty());
  }
}

TEST_CASE("recorded answers: consumer info of a paused consumer", "[unit]") {
  for (const auto& [version, text] : answers("consumer_info_paused")) {
    INFO(version);
    const auto info = must_be<ConsumerInfo>(parse_consumer_info(text));
    CHECK(info.paused);
    CHECK(info.pause_until == "2100-01-01T00:00:00Z");
    CHECK(info.pause_remaining > seconds(0));
    CHECK(info.priority_groups.empty());
  }
}

TEST_CASE("recorded answers: a stream's info gives its subjects and duplicate window, or stream not found", "[unit]") {
  for (const auto& [version, text] : answers("stream_info")) {
    INFO(version);
    const auto info = must_be<StreamInfo>(parse_stream_info(text));
    CHECK(info.name == "EVENTS");
    CHECK(info.subjects == std::vector<std::string>{"events.>"});
    CHECK(info.duplicate_window == std::chrono::minutes(2));  // the server's default
  }
  for (const auto& [version, text] : answers("stream_info_no_stream")) {
    INFO(version);
    check_server_error(must_be<ApiError>(parse_stream_info(text)), 404, kStreamNotFound);
  }
}

TEST_CASE("recorded answers: stream names of a captured subject, and of one no stream captures", "[unit]") {
  for (const auto& [version, text] : answers("stream_names")) {
    INFO(version);
    const auto names = must_be<StreamNames>(parse_stream_names(text));
    CHECK(names.streams == std::vector<std::string>{"EVENTS"});
    CHECK(names.total == 1);
  }
  for (const auto& [version, text] : answers("stream_names_none")) {
    INFO(version);
    const auto names = must_be<StreamNames>(parse_stream_names(text));
    CHECK(names.streams.empty());
    CHECK(names.total == 0);
  }
}

TEST_CASE("recorded answers: MSG.GET of messages with data, headers, neither", "[unit]") {
  for (const auto& [version, text] : answers("msg_get")) {
    INFO(version);
    const auto message = stored(text);
    CHECK(message.seq == 1);
    CHECK(message.subject == "events.a");
    CHECK(message.payload == "one");
    CHECK(message.headers.empty());
    CHECK_FALSE(message.time.empty());
  }
  for (const auto& [version, text] : answers("msg_get_headers")) {
    INFO(version);
    const auto message = stored(text);
    CHECK(message.seq == 3);
    CHECK(message.headers == "NATS/1.0\r\nTenant: t1\r\n\r\n");
    CHECK(message.payload == "three");
  }
  for (const auto& [version, text] : answers("msg_get_empty")) {
    INFO(version);
    const auto message = stored(text);
    CHECK(message.seq == 4);
    CHECK(message.subject == "events.b");
    CHECK(message.payload.empty());
    CHECK(message.headers.empty());
  }
}

TEST_CASE("recorded answers: MSG.GET by next_by_subj and last_by_subj", "[unit]") {
  for (const auto& [version, text] : answers("msg_get_next")) {
    INFO(version);
    const auto message = stored(text);
    CHECK(message.seq == 3);
    CHECK(message.subject == "events.a");
  }
  for (const auto& [version, text] : answers("msg_get_last")) {
    INFO(version);
    const auto message = stored(text);
    CHECK(message.seq == 5);
    CHECK(message.headers == "NATS/1.0\r\nNats-Msg-Id: five\r\n\r\n");
    CHECK(message.payload == "five");
  }
}

TEST_CASE("recorded answers: MSG.GET finding nothing is no message, a missing stream an error", "[unit]") {
  for (const char* name : {"msg_get_not_found", "msg_get_next_not_found", "msg_get_last_not_found"}) {
    for (const auto& [version, text] : answers(name)) {
      INFO(name << " of " << version);
      CHECK(std::holds_alternative<NoMessage>(parse_msg_get(text)));
    }
  }
  for (const auto& [version, text] : answers("msg_get_no_stream")) {
    INFO(version);
    const auto error = must_be<ApiError>(parse_msg_get(text));
    check_server_error(error, 404, kStreamNotFound);
    CHECK_FALSE(error.is_not_found());
  }
}

TEST_CASE("recorded answers: MSG.DELETE of a message, and of one already deleted", "[unit]") {
  for (const auto& [version, text] : answers("msg_delete")) {
    INFO(version);
    CHECK_FALSE(parse_msg_delete(text));
  }
  for (const auto& [version, text] : answers("msg_delete_error")) {
    INFO(version);
    const auto error = parse_msg_delete(text);
    REQUIRE(error);
    check_server_error(*error, 400, 10043);  // JSSequenceNotFoundErrF
  }
}

TEST_CASE("recorded answers: publish acknowledgements, a duplicate, a refusal", "[unit]") {
  for (const auto& [version, text] : answers("publish_ack")) {
    INFO(version);
    const auto ack = must_be<PublishAck>(parse_publish_ack(text));
    CHECK(ack.stream == "EVENTS");
    CHECK(ack.seq == 1);
    CHECK_FALSE(ack.duplicate);
  }
  for (const auto& [version, text] : answers("publish_ack_duplicate")) {
    INFO(version);
    const auto ack = must_be<PublishAck>(parse_publish_ack(text));
    CHECK(ack.seq == 5);
    CHECK(ack.duplicate);
  }
  for (const auto& [version, text] : answers("publish_ack_error")) {
    INFO(version);
    check_server_error(must_be<ApiError>(parse_publish_ack(text)), 400, 10060);  // JSStreamNotMatchErr
  }
}
