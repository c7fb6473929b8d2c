#include "log_follower.hpp"

#include <fstream>

namespace jetfan {

LogFollower::LogFollower(std::string path, OnLine on_line, std::chrono::milliseconds every)
    : path_(std::move(path)), on_line_(std::move(on_line)), thread_([this, every](const std::stop_token& stop) {
        while (!stop.stop_requested()) {
          poll();
          std::this_thread::sleep_for(every);
        }
        poll();  // what was written up to the stop
      }) {}

LogFollower::~LogFollower() {
  thread_.request_stop();
  thread_.join();
}

void LogFollower::poll() {
  std::ifstream in(path_, std::ios::binary);
  if (!in) return;
  in.seekg(static_cast<std::streamoff>(offset_));
  std::string chunk(64 * 1024, '\0');
  while (in.read(chunk.data(), static_cast<std::streamsize>(chunk.size())) || in.gcount() > 0) {
    const auto got = static_cast<std::size_t>(in.gcount());
    offset_ += got;
    partial_.append(chunk.data(), got);
    std::size_t begin = 0;
    for (std::size_t end; (end = partial_.find('\n', begin)) != std::string::npos; begin = end + 1) {
      on_line_(std::string_view(partial_).substr(begin, end - begin));
    }
    partial_.erase(0, begin);
  }
}

}  // namespace jetfan
