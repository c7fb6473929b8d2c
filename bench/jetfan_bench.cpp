// jetfan-bench: the pieces bench/run.sh puts together. Every time printed is CLOCK_MONOTONIC in
// nanoseconds, which all processes on the machine share (Node's process.hrtime too).
//
//   jetfan-bench setup URL STREAM DURABLE MAX_ACK_PENDING
//       (re)creates the stream on <STREAM-lower>.> with file storage and one durable pull consumer
//   jetfan-bench rewind URL STREAM DURABLE MAX_ACK_PENDING
//       deletes and recreates the durable alone: the messages in the stream are all pending again,
//       so one publish serves several runs
//   jetfan-bench publish URL PREFIX KEYS COUNT SIZE [RATE]
//       publishes COUNT messages of SIZE bytes to PREFIX<key>, keys taken in turn from the comma
//       list KEYS; each payload starts with its publish time. RATE (msg/s): paced; else as fast as
//       JetStream acknowledges. Prints published_ns=<time the last was stored>.
//   jetfan-bench direct URL STREAM DURABLE COUNT LATENCY_FILE [SIZE]
//       the ceiling (A): a cnats pull reader of the durable that acks every message itself, reading
//       the way jetfan does (outstanding pull requests), without the hop to a handler. SIZE, the
//       payload, makes a pull ask for fewer than 256 messages when 256 would pass 16 MiB: with two
//       pulls open, the server's buffer for the reader (max_pending, 64 MiB) must hold them all, or
//       it cuts the reader off as a slow consumer
//   jetfan-bench handler SOCKET NAME LATENCY_FILE
//       a jetfan handler (C) on the C++ client; acks every message
//   jetfan-bench capacity SOCKET NAME SERVICE_MS SCHEDULE LOG_FILE
//       a jetfan handler on the C++ client that behaves like a service with a connection pool
//       whose size changes: at most capacity(t) deliveries are worked on at once, each for
//       SERVICE_MS, the rest wait inside it in arrival order; each is acked when done. SCHEDULE is
//       capacity:seconds,... (8:10,2:10,16:10), counted from its first delivery; the last capacity
//       stays after it ends. Prints ready_ns=, then start_ns=<its first delivery>; ends when jetfan
//       closes the connection (or on SIGTERM), and then writes one line per confirmed delivery to
//       LOG_FILE: <monotonic ns at the ACK> <publish-to-ACK us> <capacity then> <receipt-to-ACK us>
//       (the last is the time spent inside the handler: its internal queue and the service)
//   jetfan-bench watch URL STREAM DURABLE TIMEOUT_S
//       polls consumer info until nothing is pending or unacked; prints settled_ns=...
//   jetfan-bench now
//       prints the current CLOCK_MONOTONIC time in nanoseconds
//   jetfan-bench held URL STREAM DURABLE COUNT TIMEOUT_S
//       waits until COUNT messages are delivered and unacked (held by the reader)
//
// Readers print ready_ns=<time they could first receive> and, when stopped, write one publish-to-
// receipt latency in microseconds per line to LATENCY_FILE.

#include <nats/nats.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "handler_client.hpp"
#include "mesh_controller.hpp"
#include "nats_handles.hpp"

namespace {

std::uint64_t now_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::uint64_t>(t.tv_sec) * 1'000'000'000ULL + static_cast<std::uint64_t>(t.tv_nsec);
}

void check(natsStatus status, const char* what) {
  if (status != NATS_OK) throw std::runtime_error(std::string(what) + ": " + natsStatus_GetText(status));
}

std::vector<std::string> split(const std::string& text, char by) {
  std::vector<std::string> out;
  std::string item;
  for (char c : text) {
    if (c == by) {
      out.push_back(item);
      item.clear();
    } else {
      item += c;
    }
  }
  out.push_back(item);
  return out;
}

// Latencies of one reader, from the publish time at the start of each payload.
struct Latencies {
  std::vector<std::uint32_t> micros;
  void record(const char* data, std::size_t size) {
    const std::uint64_t now = now_ns();
    std::uint64_t sent = 0;
    for (std::size_t i = 0; i < size && data[i] >= '0' && data[i] <= '9'; ++i) sent = sent * 10 + (data[i] - '0');
    if (sent > 0 && sent < now) micros.push_back(static_cast<std::uint32_t>((now - sent) / 1000));
  }
  void write(const std::string& path) const {
    std::ofstream out(path);
    for (auto m : micros) out << m << '\n';
  }
};

std::atomic<bool> stopping{false};

int setup(const std::vector<std::string>& a) {
  jetfan::example::MeshController controller(a[0]);
  std::string lower = a[1];
  for (char& c : lower) c = static_cast<char>(std::tolower(c));
  controller.delete_stream(a[1]);
  controller.create_stream(a[1], {lower + ".>"});
  // The confirmation ledger's bucket, for runs with BENCH_CONFIG_EXTRA=$'ledger:\n  bucket: bench_ledger'.
  controller.delete_stream("KV_bench_ledger");
  controller.create_key_value("bench_ledger", std::chrono::hours(1));
  jetfan::example::ConsumerSpec spec;
  spec.durable = a[2];
  spec.max_ack_pending = std::stoll(a[3]);
  controller.create_consumer(a[1], spec);
  return 0;
}

int rewind(const std::vector<std::string>& a) {
  natsConnection* raw = nullptr;
  check(natsConnection_ConnectTo(&raw, a[0].c_str()), "connect");
  jetfan::NatsConnectionPtr connection(raw);
  jsCtx* js = nullptr;
  check(natsConnection_JetStream(&js, raw, nullptr), "jetstream");
  jetfan::JsCtxPtr owned_js(js);
  jsErrCode code;
  const natsStatus status = js_DeleteConsumer(js, a[1].c_str(), a[2].c_str(), nullptr, &code);
  if (status != NATS_NOT_FOUND) check(status, "delete consumer");
  jetfan::example::MeshController controller(a[0]);
  jetfan::example::ConsumerSpec spec;
  spec.durable = a[2];
  spec.max_ack_pending = std::stoll(a[3]);
  controller.create_consumer(a[1], spec);
  return 0;
}

int publish(const std::vector<std::string>& a) {
  natsConnection* raw = nullptr;
  check(natsConnection_ConnectTo(&raw, a[0].c_str()), "connect");
  jetfan::NatsConnectionPtr connection(raw);
  jsOptions options;
  jsOptions_Init(&options);
  options.PublishAsync.MaxPending = 4096;
  jsCtx* js = nullptr;
  check(natsConnection_JetStream(&js, raw, &options), "jetstream");
  jetfan::JsCtxPtr owned_js(js);
  const auto keys = split(a[2], ',');
  const long count = std::stol(a[3]);
  const std::size_t size = std::stoul(a[4]);
  const double rate = a.size() > 5 ? std::stod(a[5]) : 0;
  std::vector<std::string> subjects;
  for (const auto& key : keys) subjects.push_back(a[1] + key);
  std::string payload(size, 'x');
  const std::uint64_t start = now_ns();
  for (long i = 0; i < count; ++i) {
    if (rate > 0) {
      // Sleep, not spin: a spinning publisher would take one of the machine's cores from the
      // readers being measured.
      const auto due = start + static_cast<std::uint64_t>(static_cast<double>(i) * 1e9 / rate);
      const timespec until{static_cast<time_t>(due / 1'000'000'000ULL), static_cast<long>(due % 1'000'000'000ULL)};
      clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, nullptr);
    }
    const std::string stamp = std::to_string(now_ns()) + " ";
    payload.replace(0, std::min(stamp.size(), size), stamp.substr(0, std::min(stamp.size(), size)));
    check(js_PublishAsync(js, subjects[static_cast<std::size_t>(i) % subjects.size()].c_str(), payload.data(),
                          static_cast<int>(payload.size()), nullptr),
          "publish");
  }
  jsPubOptions done;
  jsPubOptions_Init(&done);
  done.MaxWait = 60000;
  check(js_PublishAsyncComplete(js, &done), "publish complete");
  std::printf("published_ns=%llu\n", static_cast<unsigned long long>(now_ns()));
  return 0;
}

// The ceiling: the same way of reading as jetfan (pull requests kept outstanding, each with its own
// reply subject; the next requested before the current is used up), acking every message in the
// delivery callback itself. Everything runs on cnats's one delivery thread for the subscription.
struct DirectReader {
  natsConnection* connection = nullptr;
  std::string pull_subject, inbox;
  long batch = 256;
  long credit = 0;  // requested and not yet delivered
  std::uint64_t next_pull = 1;
  std::atomic<long> received{0};
  Latencies latencies;

  void top_up() {
    while (credit < batch) {
      const std::string reply = inbox + std::to_string(next_pull++);
      const std::string body = "{\"batch\":" + std::to_string(batch) + ",\"expires\":5000000000}";
      natsConnection_PublishRequest(connection, pull_subject.c_str(), reply.c_str(), body.data(),
                                    static_cast<int>(body.size()));
      credit += batch;
    }
  }
  static void on_message(natsConnection*, natsSubscription*, natsMsg* message, void* closure) {
    auto& self = *static_cast<DirectReader*>(closure);
    const char* reply = natsMsg_GetReply(message);
    if (reply && std::string_view(reply).rfind("$JS.ACK.", 0) == 0) {
      self.latencies.record(natsMsg_GetData(message), static_cast<std::size_t>(natsMsg_GetDataLength(message)));
      natsConnection_Publish(self.connection, reply, "+ACK", 4);
      --self.credit;
      ++self.received;
    } else {
      const char* pending = nullptr;  // what an expired request had left
      if (natsMsgHeader_Get(message, "Nats-Pending-Messages", &pending) == NATS_OK) self.credit -= std::atol(pending);
    }
    natsMsg_Destroy(message);
    self.top_up();
  }
};

int direct(const std::vector<std::string>& a) {
  natsConnection* raw = nullptr;
  check(natsConnection_ConnectTo(&raw, a[0].c_str()), "connect");
  jetfan::NatsConnectionPtr connection(raw);
  DirectReader reader;
  reader.connection = raw;
  if (a.size() > 5) reader.batch = std::clamp((16L << 20) / std::max(1L, std::stol(a[5])), 1L, 256L);
  reader.pull_subject = "$JS.API.CONSUMER.MSG.NEXT." + a[1] + "." + a[2];
  natsInbox* inbox = nullptr;
  check(natsInbox_Create(&inbox), "inbox");
  reader.inbox = std::string(inbox) + ".";
  natsInbox_Destroy(inbox);
  natsSubscription* sub = nullptr;
  check(natsConnection_Subscribe(&sub, raw, (reader.inbox + "*").c_str(), DirectReader::on_message, &reader),
        "subscribe");
  jetfan::NatsSubscriptionPtr owned_sub(sub);
  natsSubscription_SetPendingLimits(sub, -1, -1);
  const long count = std::stol(a[3]);
  std::printf("ready_ns=%llu\n", static_cast<unsigned long long>(now_ns()));
  std::fflush(stdout);
  natsConnection_Flush(raw);
  reader.top_up();  // before the callback can run, so this thread is the only one touching credit
  while (reader.received < count && !stopping) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  natsSubscription_Unsubscribe(sub);
  natsConnection_Flush(raw);
  reader.latencies.write(a[4]);
  return 0;
}

int handler(const std::vector<std::string>& a) {
  // Ends when jetfan goes: the harness stops jetfan, then reads the latencies this writes.
  // JETFAN_BENCH_PROTOCOL=1 measures the protocol version 1 path of a jetfan that speaks 2.
  const char* protocol = std::getenv("JETFAN_BENCH_PROTOCOL");
  const auto version = protocol != nullptr && std::string_view(protocol) == "1" ? jetfan::proto::kVersion1
                                                                                : jetfan::proto::kLatestVersion;
  jetfan::HandlerClient client(a[0], a[1], {.reconnect = false, .protocol_version = version});
  Latencies latencies;
  std::printf("ready_ns=%llu\n", static_cast<unsigned long long>(now_ns()));
  std::fflush(stdout);
  while (auto message = client.next()) {
    latencies.record(message->payload.data(), message->payload.size());
    client.ack(message->id);
  }
  latencies.write(a[2]);
  return 0;
}

// The `capacity` handler. One thread reads deliveries (client.next()) and queues them; one service
// thread starts the queued ones in arrival order while fewer than capacity(now) are in service,
// acks each SERVICE_MS after its start, and sleeps until the next of: a service ends, the schedule
// moves on, a delivery arrives. ack() from the service thread is written to jetfan at once.
struct CapacityService {
  struct Step {
    long capacity;
    std::uint64_t until_ns;  // from the first delivery; the last step never ends
  };
  struct Job {
    std::uint64_t id, published_ns, received_ns, done_ns = 0;
  };
  struct Confirmed {
    std::uint64_t at_ns;
    std::uint32_t publish_us;
    long capacity;
    std::uint32_t inside_us;
  };

  jetfan::HandlerClient* client = nullptr;
  std::uint64_t service_ns = 0;
  std::vector<Step> schedule;
  std::mutex mutex;
  std::condition_variable wake;
  std::deque<Job> waiting;     // arrived, not started
  std::deque<Job> serving;     // started; all take service_ns, so they end in start order
  std::uint64_t start_ns = 0;  // the first delivery's arrival; 0 before it
  bool closed = false;
  std::vector<Confirmed> log;

  static std::vector<Step> parse(const std::string& text) {
    std::vector<Step> steps;
    std::uint64_t at = 0;
    for (const auto& item : split(text, ',')) {
      const auto parts = split(item, ':');
      if (parts.size() != 2) throw std::runtime_error("SCHEDULE is capacity:seconds,...: " + text);
      const long capacity = std::stol(parts[0]);
      if (capacity < 1) throw std::runtime_error("a capacity is at least 1: " + text);
      at += static_cast<std::uint64_t>(std::stod(parts[1]) * 1e9);
      steps.push_back({capacity, at});
    }
    steps.back().until_ns = UINT64_MAX;
    return steps;
  }
  // Capacity and the time (absolute ns) it next changes, at `now`; needs start_ns.
  std::pair<long, std::uint64_t> capacity_at(std::uint64_t now) const {
    const std::uint64_t since = now - start_ns;
    for (const auto& step : schedule) {
      if (since < step.until_ns)
        return {step.capacity, step.until_ns == UINT64_MAX ? UINT64_MAX : start_ns + step.until_ns};
    }
    return {schedule.back().capacity, UINT64_MAX};
  }

  void arrived(const jetfan::Delivery& delivery) {
    const std::uint64_t now = now_ns();
    std::uint64_t sent = 0;
    const auto& data = delivery.payload;
    for (std::size_t i = 0; i < data.size() && data[i] >= '0' && data[i] <= '9'; ++i)
      sent = sent * 10 + (data[i] - '0');
    std::lock_guard lock(mutex);
    if (start_ns == 0) {
      start_ns = now;
      std::printf("start_ns=%llu\n", static_cast<unsigned long long>(now));
      std::fflush(stdout);
    }
    waiting.push_back({delivery.id, sent, now});
    wake.notify_one();
  }
  void close() {
    std::lock_guard lock(mutex);
    closed = true;
    wake.notify_one();
  }

  void serve() {
    std::unique_lock lock(mutex);
    while (!closed) {
      std::uint64_t now = now_ns();
      // Services that have ended: ack them.
      while (!serving.empty() && serving.front().done_ns <= now) {
        const Job job = serving.front();
        serving.pop_front();
        const long capacity = capacity_at(now).first;
        if (client->ack(job.id)) {
          const std::uint64_t at = now_ns();
          log.push_back({at,
                         job.published_ns > 0 && job.published_ns < at
                             ? static_cast<std::uint32_t>((at - job.published_ns) / 1000)
                             : 0,
                         capacity, static_cast<std::uint32_t>((at - job.received_ns) / 1000)});
        }
      }
      std::uint64_t next = UINT64_MAX;
      if (start_ns != 0) {
        const auto [capacity, changes] = capacity_at(now);
        while (!waiting.empty() && static_cast<long>(serving.size()) < capacity) {
          Job job = waiting.front();
          waiting.pop_front();
          job.done_ns = now + service_ns;
          serving.push_back(job);
        }
        next = changes;
      }
      if (!serving.empty()) next = std::min(next, serving.front().done_ns);
      if (next == UINT64_MAX) {
        wake.wait(lock);
      } else if (next > now) {
        // The condition variable's clock is steady_clock, which is CLOCK_MONOTONIC on Linux.
        wake.wait_until(lock, std::chrono::steady_clock::time_point(std::chrono::nanoseconds(next)));
      }
    }
  }

  void write(const std::string& path) const {
    std::ofstream out(path);
    for (const auto& c : log) out << c.at_ns << ' ' << c.publish_us << ' ' << c.capacity << ' ' << c.inside_us << '\n';
  }
};

jetfan::HandlerClient* capacity_client = nullptr;

int capacity(const std::vector<std::string>& a) {
  CapacityService service;
  service.service_ns = static_cast<std::uint64_t>(std::stod(a[2]) * 1e6);
  service.schedule = CapacityService::parse(a[3]);
  jetfan::HandlerClient client(a[0], a[1], {.reconnect = false});
  service.client = &client;
  capacity_client = &client;
  auto stop = [](int) {
    stopping = true;
    if (capacity_client != nullptr) capacity_client->stop();
  };
  std::signal(SIGTERM, stop);
  std::signal(SIGINT, stop);
  std::printf("ready_ns=%llu\n", static_cast<unsigned long long>(now_ns()));
  std::fflush(stdout);
  std::thread server([&] { service.serve(); });
  try {
    while (auto message = client.next()) service.arrived(*message);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "jetfan-bench capacity: %s\n", e.what());
  }
  service.close();
  server.join();
  capacity_client = nullptr;
  service.write(a[4]);
  return 0;
}

int watch(const std::vector<std::string>& a, bool held) {
  jetfan::example::MeshController controller(a[0]);
  const long want = held ? std::stol(a[3]) : 0;
  const auto deadline = now_ns() + std::stoull(a[held ? 4 : 3]) * 1'000'000'000ULL;
  while (now_ns() < deadline) {
    const auto state = controller.state(a[1], a[2]);
    const bool done = held ? state.num_ack_pending >= want : state.num_pending == 0 && state.num_ack_pending == 0;
    if (done) {
      std::printf("settled_ns=%llu\n", static_cast<unsigned long long>(now_ns()));
      return 0;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  std::fprintf(stderr, "jetfan-bench: consumer %s did not settle in time\n", a[2].c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  std::signal(SIGTERM, [](int) { stopping = true; });
  std::signal(SIGINT, [](int) { stopping = true; });
  try {
    const std::string command = args.empty() ? "" : args[0];
    const std::vector<std::string> rest(args.begin() + (args.empty() ? 0 : 1), args.end());
    if (command == "now") {
      std::printf("%llu\n", static_cast<unsigned long long>(now_ns()));
      return 0;
    }
    if (command == "setup" && rest.size() == 4) return setup(rest);
    if (command == "rewind" && rest.size() == 4) return rewind(rest);
    if (command == "publish" && rest.size() >= 5) return publish(rest);
    if (command == "direct" && (rest.size() == 5 || rest.size() == 6)) return direct(rest);
    if (command == "handler" && rest.size() == 3) return handler(rest);
    if (command == "capacity" && rest.size() == 5) return capacity(rest);
    if (command == "watch" && rest.size() == 4) return watch(rest, false);
    if (command == "held" && rest.size() == 5) return watch(rest, true);
    std::fprintf(stderr, "usage: see the comment at the top of bench/jetfan_bench.cpp\n");
    return 64;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "jetfan-bench: %s\n", e.what());
    return 1;
  }
}
