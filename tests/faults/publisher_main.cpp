// faults-publisher: the workload. Publishes uniquely numbered messages to JetStream at a steady
// rate and records each attempt and each answer of the server.
//
//   faults-publisher URLS RECORD_FILE RATE SIZE KEYS [FIRST_ID]
//
// URLS: comma-separated server URLs. RATE: messages per second, paced (a publisher that falls
// behind by more than a second does not burst to catch up). KEYS: comma-separated list; message
// `id` goes to subject "events." + KEYS[id % count] with payload "<id> <key> " padded with 'x' to
// SIZE bytes. Runs until SIGTERM or SIGINT, then waits up to 10 s for outstanding answers.
//
// Records (record_log.hpp), kind:
//   1 attempt    id; written before the message is handed to cnats
//   2 stored     id, stream_seq: the server acknowledged it (it is in the stream)
//   3 failed     id: the server answered with an error, or no answer came in time (it may or
//                may not be in the stream)
//   4 not sent   id: cnats refused it (no connection and its buffer full, or stalled)

#include <nats/nats.h>
#include <time.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "nats_owned.hpp"
#include "record_log.hpp"

namespace {

using jetfan::faults::Record;
using jetfan::faults::RecordLog;

std::atomic<bool> stopping{false};

enum Kind : std::uint8_t { kAttempt = 1, kStored = 2, kFailed = 3, kNotSent = 4 };

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out(1);
  for (char c : text) {
    if (c == ',') {
      out.emplace_back();
    } else {
      out.back().push_back(c);
    }
  }
  return out;
}

std::uint64_t id_of(natsMsg* message) {
  const char* data = natsMsg_GetData(message);
  const int length = natsMsg_GetDataLength(message);
  std::uint64_t id = 0;
  for (int i = 0; i < length && data[i] >= '0' && data[i] <= '9'; ++i)
    id = id * 10 + static_cast<std::uint64_t>(data[i] - '0');
  return id;
}

void on_answer(jsCtx*, natsMsg* message, jsPubAck* ack, jsPubAckErr* error, void* closure) {
  auto& log = *static_cast<RecordLog*>(closure);
  Record record;
  record.id = id_of(message);
  if (ack) {
    record.kind = kStored;
    record.stream_seq = ack->Sequence;
  } else {
    record.kind = kFailed;
    record.aux = error ? static_cast<std::uint32_t>(error->Err) : 0;
  }
  log.append(record);
  natsMsg_Destroy(message);
}

void sleep_until(std::uint64_t due_ns) {
  const timespec until{static_cast<time_t>(due_ns / 1'000'000'000ULL), static_cast<long>(due_ns % 1'000'000'000ULL)};
  clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, nullptr);
}

int run(const std::vector<std::string>& args) {
  const std::string urls = args[0];
  RecordLog log(args[1]);
  const double rate = std::stod(args[2]);
  const std::size_t size = std::stoul(args[3]);
  const auto keys = split(args[4]);
  std::uint64_t id = args.size() > 5 ? std::stoull(args[5]) : 1;

  auto connection = jetfan::faults::connect_forever(urls, "faults-publisher");
  jsOptions options;
  jsOptions_Init(&options);
  options.PublishAsync.MaxPending = 2048;
  options.PublishAsync.AckHandler = on_answer;
  options.PublishAsync.AckHandlerClosure = &log;
  options.PublishAsync.StallWait = 200;
  jsCtx* raw_js = nullptr;
  jetfan::faults::check(natsConnection_JetStream(&raw_js, connection.get(), &options), "jetstream");
  jetfan::faults::OwnedJs js(raw_js);
  jsPubOptions publish_options;
  jsPubOptions_Init(&publish_options);
  publish_options.MaxWait = 5000;  // no answer in 5 s: recorded as failed, not waited for for ever

  std::printf("publishing\n");
  std::fflush(stdout);
  const double interval_ns = 1e9 / rate;
  std::uint64_t start = jetfan::faults::monotonic_ns();
  std::uint64_t sent_since_start = 0;
  std::string payload;
  while (!stopping) {
    const std::uint64_t due = start + static_cast<std::uint64_t>(static_cast<double>(sent_since_start) * interval_ns);
    const std::uint64_t now = jetfan::faults::monotonic_ns();
    if (now + 1'000'000'000ULL < due || due + 1'000'000'000ULL < now) {
      // Stalled by a fault for over a second: pace from now rather than burst.
      start = now;
      sent_since_start = 0;
    } else if (due > now) {
      sleep_until(due);
    }
    const std::string& key = keys[id % keys.size()];
    payload = std::to_string(id) + " " + key + " ";
    if (payload.size() < size) payload.append(size - payload.size(), 'x');
    const std::string subject = "events." + key;
    Record attempt;
    attempt.kind = kAttempt;
    attempt.id = id;
    log.append(attempt);
    natsMsg* message = nullptr;
    jetfan::faults::check(
        natsMsg_Create(&message, subject.c_str(), nullptr, payload.data(), static_cast<int>(payload.size())),
        "message");
    const natsStatus status = js_PublishMsgAsync(js.get(), &message, &publish_options);
    if (status != NATS_OK) {
      Record refused;
      refused.kind = kNotSent;
      refused.id = id;
      refused.aux = static_cast<std::uint32_t>(status);
      log.append(refused);
    }
    natsMsg_Destroy(message);  // no effect when cnats took it
    ++id;
    ++sent_since_start;
  }
  jsPubOptions done;
  jsPubOptions_Init(&done);
  done.MaxWait = 10000;
  const natsStatus completed = js_PublishAsyncComplete(js.get(), &done);
  natsMsgList pending;
  if (js_PublishAsyncGetPendingList(&pending, js.get()) == NATS_OK) {
    for (int i = 0; i < pending.Count; ++i) {
      Record failed;
      failed.kind = kFailed;
      failed.id = id_of(pending.Msgs[i]);
      log.append(failed);
    }
    natsMsgList_Destroy(&pending);
  }
  std::printf("stopped at id %llu (%s)\n", static_cast<unsigned long long>(id), natsStatus_GetText(completed));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: faults-publisher URLS RECORD_FILE RATE SIZE KEYS [FIRST_ID]\n");
    return 64;
  }
  std::signal(SIGTERM, [](int) { stopping = true; });
  std::signal(SIGINT, [](int) { stopping = true; });
  try {
    return run(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "faults-publisher: %s\n", e.what());
    return 1;
  }
}
