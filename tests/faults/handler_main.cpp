// faults-handler: a recording jetfan handler on the C++ client (clients/cpp/handler_client.hpp).
//
//   faults-handler SOCKET NAME RECORD_FILE [--poison MOD:REM] [--slow-us US] [--reconnect-every N]
//                  [--never-confirm 1] [--batch 1] [--nak-first 1] [--follow-up PREFIX]
//
// Records every delivery it gets and every answer it gives (record_log.hpp), kind:
//   1 delivered   stream_seq, id (the payload's number), aux = the server's delivery count
//                 (protocol version 2's server_deliveries; MSG's own count, which also counts
//                 jetfan's retries, where the connection speaks version 1); flags bit 0 set when
//                 the key jetfan gave differs from the key in the payload
//   2 acked       3 nak'd    4 dropped: the connection was closed with this delivery unconfirmed
//   5 connected   6 disconnected (jetfan went away or refused us)
// `connection` numbers this process's connections from 1, so a reader knows which deliveries a
// disconnect voided.
//
// Behaviour: ACK everything, except ids with id % MOD == REM (--poison), which it NAKs every time
// (a message this handler never confirms). --slow-us: sleep that long before each answer.
// --reconnect-every N: after every N deliveries, close the connection without confirming the
// last one, and connect again (a handler that reconnects in a loop). --never-confirm: a stuck
// handler, which takes every delivery and answers none. --nak-first 1: NAK each message the first
// time it comes (the server's delivery count 1, as aux), ACK it later. Each answer is written to the socket at
// once and recorded after that, so "acked" on record means jetfan can read the ACK; --batch 1
// leaves answers to the client's batching (one write per burst) for the soak, where nothing is
// killed. --follow-up PREFIX: before each ACK, publish the message's payload to PREFIX<id> through
// jetfan, tied to the delivery (index 0), without waiting for the answer: jetfan holds the ACK
// until the follow-up is stored (and makes it a NAK if it is not). Whenever jetfan is away it
// keeps trying to connect, so it rides out jetfan being killed and restarted. The harness ends it
// with a signal: its records are safe whatever ends it.
//
// A delivery is on record before it is confirmed, and the record survives SIGKILL (RecordLog).

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "handler_client.hpp"
#include "record_log.hpp"

namespace {

using jetfan::faults::Record;
using jetfan::faults::RecordLog;

enum Kind : std::uint8_t { kDelivered = 1, kAcked = 2, kNaked = 3, kDropped = 4, kConnected = 5, kDisconnected = 6 };

struct Options {
  std::string socket, name, record;
  std::uint64_t poison_mod = 0, poison_rem = 0;
  unsigned slow_us = 0;
  unsigned reconnect_every = 0;
  bool never_confirm = false;
  bool batch = false;
  bool nak_first = false;
  std::string follow_up;  // PREFIX of a tied publish before each ACK; empty: none
};

std::uint64_t payload_id(const std::string& payload, std::string_view& key_in_payload) {
  std::uint64_t id = 0;
  std::size_t i = 0;
  for (; i < payload.size() && payload[i] >= '0' && payload[i] <= '9'; ++i)
    id = id * 10 + static_cast<std::uint64_t>(payload[i] - '0');
  const std::size_t key_begin = i + 1;
  const std::size_t key_end = payload.find(' ', key_begin);
  key_in_payload = key_begin < payload.size() && key_end != std::string::npos
                       ? std::string_view(payload).substr(key_begin, key_end - key_begin)
                       : std::string_view();
  return id;
}

// One connection's life. Returns when jetfan closes it, fails, or the handler drops it on purpose.
void serve(jetfan::HandlerClient& client, const Options& options, RecordLog& log, std::uint16_t connection) {
  unsigned delivered = 0;
  for (;;) {
    auto message = client.next();
    if (!message) return;
    std::string_view key_in_payload;
    Record record;
    record.kind = kDelivered;
    record.stream_seq = message->stream_seq;
    record.id = payload_id(message->payload, key_in_payload);
    // The checker reads aux as the server's count, which an ordered handler's retries do not move.
    const std::uint64_t server_deliveries =
        message->server_deliveries ? message->server_deliveries : message->deliveries;
    record.aux = static_cast<std::uint32_t>(server_deliveries);
    record.flags = key_in_payload != message->key ? 1 : 0;
    record.connection = connection;
    log.append(record);
    record.t_ns = 0;
    if (options.reconnect_every && ++delivered % options.reconnect_every == 0) {
      record.kind = kDropped;
      log.append(record);
      return;
    }
    if (options.never_confirm) continue;
    if (options.slow_us) std::this_thread::sleep_for(std::chrono::microseconds(options.slow_us));
    const bool poison = (options.poison_mod && record.id % options.poison_mod == options.poison_rem) ||
                        (options.nak_first && server_deliveries == 1);
    record.kind = poison ? kNaked : kAcked;
    if (!poison && !options.follow_up.empty()) {
      // Its answer is jetfan's business: the ACK below counts only once the follow-up is stored.
      (void)client.publish(*message, options.follow_up + std::to_string(record.id), message->payload);
    }
    poison ? client.nak(message->id) : client.ack(message->id);
    if (options.batch) {
      log.append(record);  // the answer goes out with the next read, perhaps after this process dies
    } else {
      // Written to the socket before it is on record: an "acked" record means jetfan can read it.
      client.flush();
      log.append(record);
    }
  }
}

int run(const Options& options) {
  RecordLog log(options.record);
  std::uint16_t connection = 0;
  bool announced = false;
  for (;;) {
    try {
      // The harness counts connections itself, so the client does not reconnect on its own.
      jetfan::ClientOptions client_options;
      client_options.reconnect = false;
      client_options.connect_timeout = std::chrono::milliseconds(200);
      jetfan::HandlerClient client(options.socket, options.name, client_options);
      ++connection;
      log.append(Record{0, 0, 0, 0, kConnected, 0, connection});
      if (!announced) {
        std::printf("ready %s\n", options.name.c_str());
        std::fflush(stdout);
        announced = true;
      }
      serve(client, options, log, connection);
    } catch (const jetfan::ClientError& e) {
      // jetfan is away (killed, restarting, draining): try again shortly.
      if (connection > 0) log.append(Record{0, 0, 0, 0, kDisconnected, 0, connection});
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    log.append(Record{0, 0, 0, 0, kDisconnected, 0, connection});
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr,
                 "usage: faults-handler SOCKET NAME RECORD_FILE [--poison MOD:REM] [--slow-us US] [--reconnect-every "
                 "N] [--never-confirm 1] [--batch 1] [--nak-first 1] [--follow-up PREFIX]\n");
    return 64;
  }
  Options options{argv[1], argv[2], argv[3]};
  for (int i = 4; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--poison") {
      const auto colon = value.find(':');
      options.poison_mod = std::stoull(value.substr(0, colon));
      options.poison_rem = std::stoull(value.substr(colon + 1));
    } else if (flag == "--slow-us") {
      options.slow_us = static_cast<unsigned>(std::stoul(value));
    } else if (flag == "--reconnect-every") {
      options.reconnect_every = static_cast<unsigned>(std::stoul(value));
    } else if (flag == "--nak-first") {
      options.nak_first = value == "1";
    } else if (flag == "--batch") {
      options.batch = value == "1";
    } else if (flag == "--follow-up") {
      options.follow_up = value;
    } else if (flag == "--never-confirm") {
      options.never_confirm = value == "1";
    } else {
      std::fprintf(stderr, "faults-handler: unknown flag %s\n", flag.c_str());
      return 64;
    }
  }
  try {
    return run(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "faults-handler %s: %s\n", options.name.c_str(), e.what());
    return 1;
  }
}
