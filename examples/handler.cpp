// A complete handler in C++: prints each message it is given and acks it. handler SOCKET NAME
#include <jetfan/handler_client.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 3) return std::fprintf(stderr, "usage: %s SOCKET NAME\n", argv[0]), 64;
  jetfan::HandlerClient client(argv[1], argv[2]);  // reconnects by itself if jetfan restarts
  std::printf("[%s] connected\n", argv[2]), std::fflush(stdout);
  client.run([&](const jetfan::Delivery& msg) {  // throw to NAK, throw jetfan::Term to TERM
    std::printf("[%s] got %s (seq %llu): %s\n", argv[2], msg.key.c_str(), (unsigned long long)msg.stream_seq,
                msg.payload.c_str()),
        std::fflush(stdout);
    // To publish in reply (publish.subjects in the handler's config), tie it to msg: the ACK then
    // counts once it is stored. client.publish(msg, "builds.started", msg.payload);
    return jetfan::Outcome::ack();
  });
}
