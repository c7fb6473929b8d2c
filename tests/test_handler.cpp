// test_handler: a real handler process for the integration tests, on the C++ client.
//
//   test_handler SOCKET NAME SEEN_FILE [--default ACTION] [--only ACTION] [--details yes] [--workers N]
//
// For every message it appends "<stream-seq> <key> <deliveries> <payload>" to SEEN_FILE, then
// answers. With --details, it also appends "<stream-seq> <deliveries> <server-deliveries> <headers> <traceparent>"
// to SEEN_FILE.details, the header block in hex ("-" for none), byte for byte as it came, and the MSG's
// traceparent (protocol version 3; "-" for none). The payload may carry
// directives "<action>@<name>"; the one naming this handler wins, else --default (ack); --only ACTION answers every
// message so, whatever it says. Actions:
//   ack, term, nak          answer so
//   nak1                    nak on the first delivery, ack later ones
//   wip<ms>, sleep<ms>      see below
//   hang, hang1             never answer (the delivery times out); hang1 only on the first delivery
//   die, die1               exit at once with status 3, without answering; die1 only on the first
//   sleep<ms>               wait that long, then ack
//   wip<ms>                 send WIP every ms/3 for ms, then ack
// With --workers N (N > 1) it works on up to N messages at once (HandlerClient::run), and knows only
// ack, nak, nak1 and sleep<ms>.

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>

#include "handler_client.hpp"

namespace {

std::string hex(const std::string& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (const unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

std::string action_for(const std::string& payload, const std::string& name, const std::string& fallback) {
  std::istringstream words(payload);
  for (std::string word; words >> word;) {
    const auto at = word.find('@');
    if (at != std::string::npos && word.substr(at + 1) == name) return word.substr(0, at);
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: test_handler SOCKET NAME SEEN_FILE [--default ACTION]\n");
    return 64;
  }
  const std::string name = argv[2];
  std::string fallback = "ack";
  std::string only;
  bool details = false;
  unsigned workers = 1;
  for (int i = 4; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--default") fallback = argv[i + 1];
    if (std::string(argv[i]) == "--only") only = argv[i + 1];
    if (std::string(argv[i]) == "--details") details = std::string(argv[i + 1]) == "yes";
    if (std::string(argv[i]) == "--workers") workers = static_cast<unsigned>(std::stoul(argv[i + 1]));
  }
  try {
    // Exits when jetfan goes, so a test that starts a new jetfan decides which handlers it gets.
    jetfan::HandlerClient client(argv[1], name, {.reconnect = false});
    std::printf("ready %s\n", name.c_str());
    std::fflush(stdout);
    std::ofstream seen(argv[3], std::ios::app);
    std::ofstream detail;
    if (details) detail.open(std::string(argv[3]) + ".details", std::ios::app);
    if (workers > 1) {
      std::mutex seen_lock;
      client.run(
          [&](const jetfan::Delivery& message) {
            {
              const std::lock_guard lock(seen_lock);
              seen << message.stream_seq << ' ' << message.key << ' ' << message.deliveries << ' ' << message.payload
                   << '\n'
                   << std::flush;
            }
            std::string action = only.empty() ? action_for(message.payload, name, fallback) : only;
            if (action == "nak1") action = message.deliveries == 1 ? "nak" : "ack";
            if (action == "nak") return jetfan::Outcome::nak();
            if (action.rfind("sleep", 0) == 0) {
              std::this_thread::sleep_for(std::chrono::milliseconds(std::stoi(action.substr(5))));
            } else if (action != "ack") {
              std::fprintf(stderr, "action %s is not for --workers\n", action.c_str());
              _exit(2);
            }
            return jetfan::Outcome::ack();
          },
          {.workers = workers});
      std::printf("closed\n");
      return 0;
    }
    while (auto message = client.next()) {
      if (details) {
        detail << message->stream_seq << ' ' << message->deliveries << ' ' << message->server_deliveries << ' '
               << (message->headers.empty() ? "-" : hex(message->headers)) << ' ' << message->traceparent.value_or("-")
               << '\n'
               << std::flush;
      }
      seen << message->stream_seq << ' ' << message->key << ' ' << message->deliveries << ' ' << message->payload
           << '\n'
           << std::flush;
      std::string action = only.empty() ? action_for(message->payload, name, fallback) : only;
      if (action.size() > 1 && action.back() == '1') {
        // First delivery only; later ones are acked.
        action = message->deliveries == 1 ? action.substr(0, action.size() - 1) : "ack";
      }
      if (action == "ack") {
        client.ack(message->id);
      } else if (action == "term") {
        client.term(message->id, "test says poison");
      } else if (action == "nakwhy") {
        client.nak(message->id, std::nullopt, "test says try later");
      } else if (action == "nak") {
        client.nak(message->id);
      } else if (action == "hang") {
      } else if (action == "die") {
        _exit(3);
      } else if (action.rfind("sleep", 0) == 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(std::stoi(action.substr(5))));
        client.ack(message->id);
      } else if (action.rfind("wip", 0) == 0) {
        const int total = std::stoi(action.substr(3));
        for (int waited = 0; waited < total; waited += total / 3) {
          client.wip(message->id);
          std::this_thread::sleep_for(std::chrono::milliseconds(total / 3));
        }
        client.ack(message->id);
      } else {
        std::fprintf(stderr, "unknown action %s\n", action.c_str());
        return 2;
      }
    }
    client.flush();
    std::printf("closed\n");
    return 0;
  } catch (const jetfan::ClientError& e) {
    std::printf("error: %s\n", e.what());
    return 1;
  }
}
