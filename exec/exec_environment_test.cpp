#include "exec_environment.hpp"
#include "exec_options.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

using jetfan::delivery_environment;

TEST_CASE("exec environment: the delivery's variables, inherited ones kept, stale ones dropped", "[unit]") {
  jetfan::Delivery msg;
  msg.key = "a.b";
  msg.stream_seq = 42;
  msg.deliveries = 2;
  msg.subject = "module.a.b";
  msg.published = std::chrono::system_clock::time_point(std::chrono::nanoseconds(1'764'617'017'000'000'042));
  msg.headers = "NATS/1.0\r\nTrace-Id: abc\r\nX-Many: 1\r\nX-Many: 2\r\nx.many: 3\r\n\r\n";
  msg.traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  const char* inherited[] = {"PATH=/bin",           "JETFAN_KEY=stale",  "JETFAN_HEADER_OLD=stale",
                             "JETFAN_PUBLISH_FD=9", "JETFAN_OTHER=kept", nullptr};
  const auto env = delivery_environment(msg, "builder", inherited);
  auto has = [&](const std::string& entry) { return std::find(env.begin(), env.end(), entry) != env.end(); };
  CHECK(has("PATH=/bin"));
  CHECK(has("JETFAN_OTHER=kept"));
  CHECK_FALSE(has("JETFAN_KEY=stale"));
  CHECK_FALSE(has("JETFAN_HEADER_OLD=stale"));
  CHECK(has("JETFAN_HANDLER=builder"));
  CHECK(has("JETFAN_KEY=a.b"));
  CHECK(has("JETFAN_SEQ=42"));
  CHECK(has("JETFAN_DELIVERIES=2"));
  CHECK(has("JETFAN_PUBLISH_FD=3"));
  CHECK_FALSE(has("JETFAN_PUBLISH_FD=9"));
  CHECK(has("JETFAN_SUBJECT=module.a.b"));
  CHECK(has("JETFAN_PUBLISHED=2025-12-01T19:23:37.000000042Z"));
  CHECK(has("JETFAN_TRACEPARENT=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));
  CHECK(has("JETFAN_HEADERS=Trace-Id: abc\nX-Many: 1\nX-Many: 2\nx.many: 3\n"));
  CHECK(has("JETFAN_HEADER_TRACE_ID=abc"));
  CHECK(has("JETFAN_HEADER_X_MANY=1\n2\n3"));
}

TEST_CASE("exec environment: no headers, and header names made variable names", "[unit]") {
  jetfan::Delivery msg;
  const auto env = delivery_environment(msg, "h", nullptr);
  CHECK(std::find(env.begin(), env.end(), "JETFAN_HEADERS=") != env.end());
  // A jetfan of protocol version 1 sends neither the subject nor the publish time; an untraced
  // delivery (and any before version 3) has no traceparent.
  for (const auto& entry : env) {
    CHECK(entry.rfind("JETFAN_SUBJECT=", 0) != 0);
    CHECK(entry.rfind("JETFAN_PUBLISHED=", 0) != 0);
    CHECK(entry.rfind("JETFAN_TRACEPARENT=", 0) != 0);
  }
  CHECK(jetfan::header_variable("Nats-Msg-Id") == "JETFAN_HEADER_NATS_MSG_ID");
  CHECK(jetfan::header_variable("a.b:c 9") == "JETFAN_HEADER_A_B_C_9");
}

TEST_CASE("exec's --help names every variable a command is given", "[unit]") {
  jetfan::Delivery msg;
  msg.subject = "module.a.b";
  msg.published = std::chrono::system_clock::time_point(std::chrono::seconds(1));
  msg.traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  msg.headers = "NATS/1.0\r\nTrace-Id: abc\r\n\r\n";
  const std::string usage = jetfan::exec_usage();
  for (const auto& entry : delivery_environment(msg, "h", nullptr)) {
    std::string name = entry.substr(0, entry.find('='));
    if (name.rfind("JETFAN_HEADER_", 0) == 0) name = "JETFAN_HEADER_<NAME>";
    INFO(name);
    CHECK_THAT(usage, Catch::Contains("  " + name + " "));
  }
}
