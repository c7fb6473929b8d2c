// jetfan-example-handler: the smallest useful handler, written with the C++ client. It prints every
// message it is given and acknowledges it.
//
//   jetfan-example-handler SOCKET HANDLER

#include <cstdio>

#include "handler_client.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: jetfan-example-handler SOCKET HANDLER\n");
    return 64;
  }
  try {
    jetfan::HandlerClient client(argv[1], argv[2]);
    std::printf("[%s] connected; my patterns:", argv[2]);
    for (const auto& pattern : client.ready().patterns) std::printf(" %s", pattern.c_str());
    std::printf("\n");
    std::fflush(stdout);
    while (auto message = client.next()) {
      std::printf("[%s] got %s (stream seq %llu, delivery %llu): %s\n", argv[2], message->key.c_str(),
                  static_cast<unsigned long long>(message->stream_seq),
                  static_cast<unsigned long long>(message->deliveries), message->payload.c_str());
      std::fflush(stdout);
      client.ack(message->id);
    }
    std::printf("[%s] jetfan closed the connection\n", argv[2]);
    return 0;
  } catch (const jetfan::ClientError& e) {
    std::fprintf(stderr, "[%s] %s\n", argv[2], e.what());
    return 1;
  }
}
