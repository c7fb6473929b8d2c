// faults-nats: what the harness asks of the NATS servers, over cnats.
//
//   faults-nats serve URLS
//       Reads requests from stdin, one per line, and answers each on stdout, one line each:
//         req TIMEOUT_MS SUBJECT [BODY...]   ->  "ok <reply>" or "err <why>"
//         hreq TIMEOUT_MS SUBJECT HEADERS [BODY...]   the same, with headers: NAME=VALUE fields
//                                      joined by '|', each VALUE percent-encoded (%0D for a CR)
//       (the JetStream API: $JS.API.STREAM.CREATE.<s>, $JS.API.CONSUMER.INFO.<s>.<d>, ...; its
//       replies are one-line JSON). Reconnects for ever, so it outlives servers being killed.
//   faults-nats audit URLS STREAM DURABLE EXPECT TIMEOUT_S GRACE_MS OUT_FILE [GROUP]
//       Reads the durable consumer the way jetfan does (pull requests), once jetfan is stopped: what
//       the server still has unacknowledged comes back here. Writes "<stream-seq> <id> <deliveries>"
//       per message to OUT_FILE and acks it. EXPECT is a file of stream sequences, one per line (or
//       a count): it stops GRACE_MS after every one of them (that many) came back with nothing new
//       arriving, or after TIMEOUT_S. Exit 0 either way; the harness compares what came back with
//       what it expects. GROUP: the durable has that pinned_client priority group; every pull names
//       it, and, once a delivery carried the server's Nats-Pin-Id, that id too.
//   faults-nats watch URLS SUBJECT RECORD_FILE
//       Subscribes to SUBJECT ($JS.ACK.<stream>.<durable>.>: every answer jetfan sends the server
//       about a message) and records each (record_log.hpp): stream_seq and aux = delivery count from
//       the subject, kind 1 +ACK, 2 -NAK, 3 +TERM, 4 +WPI, 5 anything else. Runs until killed.

#include <nats/nats.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "nats_owned.hpp"
#include "record_log.hpp"

namespace {

using jetfan::faults::check;

std::string one_line(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

std::string percent_decoded(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      out += static_cast<char>(std::stoi(text.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

int serve(const std::string& urls) {
  auto connection = jetfan::faults::connect_forever(urls, "faults-harness");
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream words(line);
    std::string verb, subject;
    long timeout = 0;
    words >> verb >> timeout >> subject;
    std::string body;
    std::getline(words >> std::ws, body);
    if ((verb != "req" && verb != "hreq") || subject.empty()) {
      std::cout << "err bad request: " << one_line(line) << std::endl;
      continue;
    }
    natsMsg* reply = nullptr;
    natsStatus status = NATS_OK;
    if (verb == "req") {
      status = natsConnection_Request(&reply, connection.get(), subject.c_str(), body.data(),
                                      static_cast<int>(body.size()), timeout);
    } else {
      const auto space = body.find(' ');
      const std::string fields = body.substr(0, space);
      body = space == std::string::npos ? std::string() : body.substr(space + 1);
      natsMsg* request = nullptr;
      status = natsMsg_Create(&request, subject.c_str(), nullptr, body.data(), static_cast<int>(body.size()));
      jetfan::faults::OwnedMsg owned_request(request);
      std::istringstream each(fields);
      std::string field;
      while (status == NATS_OK && std::getline(each, field, '|')) {
        const auto equals = field.find('=');
        if (equals == std::string::npos) continue;
        status = natsMsgHeader_Add(request, field.substr(0, equals).c_str(),
                                   percent_decoded(field.substr(equals + 1)).c_str());
      }
      if (status == NATS_OK) status = natsConnection_RequestMsg(&reply, connection.get(), request, timeout);
    }
    jetfan::faults::OwnedMsg owned(reply);
    if (status != NATS_OK) {
      std::cout << "err " << natsStatus_GetText(status) << std::endl;
      continue;
    }
    std::cout << "ok "
              << one_line(std::string(natsMsg_GetData(reply), static_cast<std::size_t>(natsMsg_GetDataLength(reply))))
              << std::endl;
  }
  return 0;
}

// $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>, or the longer form with
// a domain and an account hash first. False if `subject` is neither.
bool parse_ack_subject(const char* subject, std::uint64_t& deliveries, std::uint64_t& seq) {
  if (!subject || std::string_view(subject).rfind("$JS.ACK.", 0) != 0) return false;
  std::vector<std::string> tokens;
  std::istringstream parts(subject + 8);
  for (std::string token; std::getline(parts, token, '.');) tokens.push_back(token);
  const std::size_t base = tokens.size() >= 9 ? 4 : 2;
  if (tokens.size() < base + 5) return false;
  deliveries = std::stoull(tokens[base]);
  seq = std::stoull(tokens[base + 1]);
  return true;
}

void on_answer(natsConnection*, natsSubscription*, natsMsg* raw, void* closure) {
  jetfan::faults::OwnedMsg message(raw);
  jetfan::faults::Record record;
  std::uint64_t deliveries = 0;
  if (!parse_ack_subject(natsMsg_GetSubject(raw), deliveries, record.stream_seq)) return;
  record.aux = static_cast<std::uint32_t>(deliveries);
  const std::string_view body(natsMsg_GetData(raw), static_cast<std::size_t>(natsMsg_GetDataLength(raw)));
  record.kind = body.rfind("+ACK", 0) == 0    ? 1
                : body.rfind("-NAK", 0) == 0  ? 2
                : body.rfind("+TERM", 0) == 0 ? 3
                : body.rfind("+WPI", 0) == 0  ? 4
                                              : 5;
  static_cast<jetfan::faults::RecordLog*>(closure)->append(record);
}

struct Audit {
  std::mutex mutex;
  std::set<std::uint64_t> seqs;
  std::set<std::uint64_t> awaited;  // expected sequences not yet back
  std::ofstream out;
  natsConnection* connection = nullptr;
  std::uint64_t last_new_ns = 0;
  std::string pin_id;  // the auditor's pin, once the server gave it one

  static void on_message(natsConnection*, natsSubscription*, natsMsg* raw, void* closure) {
    jetfan::faults::OwnedMsg message(raw);
    auto& self = *static_cast<Audit*>(closure);
    const char* pin = nullptr;
    if (natsMsgHeader_Get(raw, "Nats-Pin-Id", &pin) == NATS_OK && pin && *pin) {
      std::lock_guard lock(self.mutex);
      self.pin_id = pin;
    }
    const char* reply = natsMsg_GetReply(raw);
    if (!reply || std::string_view(reply).rfind("$JS.ACK.", 0) != 0) return;  // a status: 404/408/100
    std::uint64_t deliveries = 0, seq = 0;
    if (!parse_ack_subject(reply, deliveries, seq)) return;
    std::uint64_t id = 0;
    const char* data = natsMsg_GetData(raw);
    for (int i = 0; i < natsMsg_GetDataLength(raw) && data[i] >= '0' && data[i] <= '9'; ++i)
      id = id * 10 + (data[i] - '0');
    {
      std::lock_guard lock(self.mutex);
      self.out << seq << ' ' << id << ' ' << deliveries << '\n' << std::flush;
      if (self.seqs.insert(seq).second) self.last_new_ns = jetfan::faults::monotonic_ns();
      self.awaited.erase(seq);
    }
    natsConnection_Publish(self.connection, reply, "+ACK", 4);
  }
};

int watch(const std::vector<std::string>& a) {
  jetfan::faults::RecordLog log(a[2]);
  auto connection = jetfan::faults::connect_forever(a[0], "faults-watch");
  natsSubscription* raw = nullptr;
  check(natsConnection_Subscribe(&raw, connection.get(), a[1].c_str(), on_answer, &log), "subscribe " + a[1]);
  jetfan::faults::OwnedSubscription subscription(raw);
  natsSubscription_SetPendingLimits(raw, -1, -1);
  natsConnection_Flush(connection.get());
  std::printf("watching %s\n", a[1].c_str());
  std::fflush(stdout);
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(3600));
}

int audit(const std::vector<std::string>& a) {
  auto connection = jetfan::faults::connect_forever(a[0], "faults-audit");
  const std::string pull_subject = "$JS.API.CONSUMER.MSG.NEXT." + a[1] + "." + a[2];
  std::size_t expect = 0;
  Audit state;
  if (!a[3].empty() && a[3].find_first_not_of("0123456789") == std::string::npos) {
    expect = std::stoul(a[3]);
  } else {
    std::ifstream list(a[3]);
    for (std::uint64_t seq; list >> seq;) state.awaited.insert(seq);
    expect = state.awaited.size();
  }
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(std::stol(a[4]));
  const std::uint64_t grace_ns = std::stoull(a[5]) * 1'000'000ULL;
  state.out.open(a[6]);
  state.connection = connection.get();
  natsInbox* raw_inbox = nullptr;
  check(natsInbox_Create(&raw_inbox), "inbox");
  const std::string inbox = raw_inbox;
  natsInbox_Destroy(raw_inbox);
  natsSubscription* raw_sub = nullptr;
  check(natsConnection_Subscribe(&raw_sub, connection.get(), (inbox + ".*").c_str(), Audit::on_message, &state),
        "subscribe");
  jetfan::faults::OwnedSubscription subscription(raw_sub);
  natsSubscription_SetPendingLimits(raw_sub, -1, -1);
  std::uint64_t pull = 0;
  auto next_pull = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() < give_up) {
    if (std::chrono::steady_clock::now() >= next_pull) {
      // A fresh request every second, each waiting up to 2 s: a server that restarted or a
      // leader that moved forgets requests, and one lost request must not end the audit.
      const std::string reply = inbox + "." + std::to_string(++pull);
      std::string body = "{\"batch\":1000,\"expires\":2000000000";
      if (a.size() > 7) {
        std::lock_guard lock(state.mutex);
        body += ",\"group\":\"" + a[7] + "\"";
        if (!state.pin_id.empty()) body += ",\"id\":\"" + state.pin_id + "\"";
      }
      body += "}";
      natsConnection_PublishRequest(connection.get(), pull_subject.c_str(), reply.c_str(), body.data(),
                                    static_cast<int>(body.size()));
      next_pull = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    }
    {
      std::lock_guard lock(state.mutex);
      const bool all_back = state.awaited.empty() && state.seqs.size() >= expect;
      if (all_back && jetfan::faults::monotonic_ns() > state.last_new_ns + grace_ns) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  natsSubscription_Unsubscribe(raw_sub);
  natsConnection_FlushTimeout(connection.get(), 5000);
  std::lock_guard lock(state.mutex);
  std::printf("audit: %zu distinct sequences came back\n", state.seqs.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.size() == 2 && args[0] == "serve") return serve(args[1]);
    if ((args.size() == 8 || args.size() == 9) && args[0] == "audit") return audit({args.begin() + 1, args.end()});
    if (args.size() == 4 && args[0] == "watch") return watch({args.begin() + 1, args.end()});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "faults-nats: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "usage: see the comment at the top of tests/faults/nats_tool_main.cpp\n");
  return 64;
}
