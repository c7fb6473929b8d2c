// jetfan-demo-controller: plays the module controller in the demo. It creates the stream and the
// durable consumer (jetfan never does), publishes events and reports the consumer's state.
//
//   jetfan-demo-controller URL setup STREAM SUBJECTS DURABLE [ACK_WAIT_MS]
//   jetfan-demo-controller URL publish SUBJECT PAYLOAD [NAME:VALUE...]   (headers)
//   jetfan-demo-controller URL wait-settled STREAM DURABLE TIMEOUT_S
//   jetfan-demo-controller URL state STREAM DURABLE
//   jetfan-demo-controller URL stream STREAM SUBJECTS      (a stream only: where handlers publish)
//   jetfan-demo-controller URL messages STREAM             (how many it holds)

#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "mesh_controller.hpp"

using jetfan::example::MeshController;

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  auto usage = [] {
    std::fprintf(stderr,
                 "usage: jetfan-demo-controller URL setup STREAM SUBJECTS DURABLE [ACK_WAIT_MS]\n"
                 "       jetfan-demo-controller URL publish SUBJECT PAYLOAD [NAME:VALUE...]\n"
                 "       jetfan-demo-controller URL wait-settled STREAM DURABLE TIMEOUT_S\n"
                 "       jetfan-demo-controller URL state STREAM DURABLE\n"
                 "       jetfan-demo-controller URL stream STREAM SUBJECTS\n"
                 "       jetfan-demo-controller URL messages STREAM\n");
    return 64;
  };
  if (args.size() < 2) return usage();
  try {
    MeshController controller(args[0]);
    const std::string& command = args[1];
    if (command == "setup" && args.size() >= 5) {
      controller.create_stream(args[2], {args[3]});
      jetfan::example::ConsumerSpec spec;
      spec.durable = args[4];
      if (args.size() > 5) spec.ack_wait = std::chrono::milliseconds(std::stoll(args[5]));
      controller.create_consumer(args[2], spec);
      std::printf("controller: created stream %s (%s) and durable pull consumer %s\n", args[2].c_str(), args[3].c_str(),
                  args[4].c_str());
      return 0;
    }
    if (command == "stream" && args.size() == 4) {
      controller.create_stream(args[2], {args[3]});
      std::printf("controller: created stream %s (%s)\n", args[2].c_str(), args[3].c_str());
      return 0;
    }
    if (command == "messages" && args.size() == 3) {
      std::printf("%llu\n", static_cast<unsigned long long>(controller.stream_messages(args[2])));
      return 0;
    }
    if (command == "publish" && args.size() >= 4) {
      std::vector<std::pair<std::string, std::string>> headers;
      for (std::size_t i = 4; i < args.size(); ++i) {
        const auto colon = args[i].find(':');
        if (colon == std::string::npos) return usage();
        headers.emplace_back(args[i].substr(0, colon), args[i].substr(colon + 1));
      }
      const auto seq = controller.publish(args[2], args[3], headers);
      std::printf("controller: published %s (stream seq %llu)\n", args[2].c_str(),
                  static_cast<unsigned long long>(seq));
      return 0;
    }
    if (command == "wait-settled" && args.size() == 5) {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(std::stoll(args[4]));
      for (;;) {
        const auto state = controller.state(args[2], args[3]);
        if (state.num_pending == 0 && state.num_ack_pending == 0) {
          std::printf("controller: consumer %s: num_pending=0 num_ack_pending=0 num_redelivered=%lld: all settled\n",
                      args[3].c_str(), static_cast<long long>(state.num_redelivered));
          return 0;
        }
        if (std::chrono::steady_clock::now() > deadline) {
          std::printf("controller: consumer %s: num_pending=%llu num_ack_pending=%lld: NOT settled\n", args[3].c_str(),
                      static_cast<unsigned long long>(state.num_pending),
                      static_cast<long long>(state.num_ack_pending));
          return 1;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    if (command == "state" && args.size() == 4) {
      const auto state = controller.state(args[2], args[3]);
      std::printf("num_pending=%llu num_ack_pending=%lld num_redelivered=%lld ack_floor_stream_seq=%llu\n",
                  static_cast<unsigned long long>(state.num_pending), static_cast<long long>(state.num_ack_pending),
                  static_cast<long long>(state.num_redelivered),
                  static_cast<unsigned long long>(state.ack_floor_stream_seq));
      return 0;
    }
    return usage();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "jetfan-demo-controller: %s\n", e.what());
    return 1;
  }
}
